/* test_sim.c — invariants of the schedule engine and the simulator.
 * Tolerances: schedule arithmetic is exact up to 1e-9 relative. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "trainsim/sim.h"

#define NEAR(a, b, rel) assert_true(fabs((a) - (b)) <= (rel) * fabs(b) + 1e-12)

static void uniform(SimChunkCost *c, int n, double f, double b)
{
    for (int i = 0; i < n; i++) {
        memset(&c[i], 0, sizeof c[i]);
        c[i].fwd_s = c[i].compute_fwd_s = f;
        c[i].bwd_s = c[i].compute_bwd_s = b;
    }
}

static double run(int p, int v, int64_t m, SimSchedule sch, const SimChunkCost *c, SimResult *r)
{
    SimStageCost st[64] = {{0}};
    SimPipeline pl = {.stages = p, .chunks = v, .micro_batches = m, .schedule = sch, .chunk = c, .stage = st};
    TsError err = {0};
    assert_int_equal(sim_pipeline_run(&pl, NULL, r, &err), TS_OK);
    return r->iteration_time_s;
}

static void test_example_1f1b(void **state)
{
    (void)state;
    SimChunkCost c[4];
    uniform(c, 4, 1, 2);
    SimResult r;
    NEAR(run(4, 1, 8, SIM_SCHED_1F1B, c, &r), 33.0, 1e-12);
    NEAR(r.bubble_fraction, 3.0 / 11.0, 1e-12);
    NEAR(r.breakdown.bubble_s, 9.0, 1e-12);
    sim_result_free(&r);
}

static void test_bubble_fractions(void **state)
{
    (void)state;
    static SimChunkCost c[64 * 8];
    int ps[] = {2, 4, 8, 16};
    int64_t ms[] = {16, 32, 96};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) {
            int p = ps[i];
            int64_t m = ms[j];
            SimResult r;
            uniform(c, p, 1.0, 2.0);
            run(p, 1, m, SIM_SCHED_1F1B, c, &r);
            NEAR(r.bubble_fraction, (double)(p - 1) / (double)(m + p - 1), 1e-9);
            sim_result_free(&r);
            run(p, 1, m, SIM_SCHED_GPIPE, c, &r);
            NEAR(r.bubble_fraction, (double)(p - 1) / (double)(m + p - 1), 1e-9);
            sim_result_free(&r);
            for (int v = 2; v <= 4; v++) {
                if (m % p) continue;
                uniform(c, p * v, 1.0 / v, 2.0 / v);
                run(p, v, m, SIM_SCHED_INTERLEAVED, c, &r);
                NEAR(r.bubble_fraction, (double)(p - 1) / (double)(v * m + p - 1), 1e-9);
                sim_result_free(&r);
            }
        }
}

static void test_pp1_no_bubble(void **state)
{
    (void)state;
    SimChunkCost c[1];
    uniform(c, 1, 0.5, 1.0);
    c[0].p2p_fwd_s = c[0].p2p_bwd_s = 0.3; /* ignored with one stage */
    SimResult r;
    NEAR(run(1, 1, 7, SIM_SCHED_1F1B, c, &r), 7 * 1.5, 1e-12);
    assert_true(r.breakdown.bubble_s == 0);
    assert_true(r.breakdown.pp_comm_exposed_s == 0);
    sim_result_free(&r);
}

static void test_uneven_and_p2p(void **state)
{
    (void)state;
    SimChunkCost c[8];
    uniform(c, 8, 1.0, 2.0);
    c[0].fwd_s += 0.3;  /* embedding */
    c[7].fwd_s += 0.5;  /* LM head + loss */
    c[7].bwd_s += 1.0;
    SimResult a, b;
    double t0 = run(8, 1, 32, SIM_SCHED_1F1B, c, &a);
    for (int i = 0; i < 8; i++) c[i].p2p_fwd_s = c[i].p2p_bwd_s = 0.01;
    double t1 = run(8, 1, 32, SIM_SCHED_1F1B, c, &b);
    assert_true(t1 > t0);
    assert_true(b.breakdown.pp_comm_exposed_s > 0);
    /* breakdown sums to the iteration time */
    double sum = 0;
    for (int i = 0; i < SIM_BD_COUNT; i++) sum += sim_breakdown_get(&b.breakdown, i);
    NEAR(sum, t1, 1e-9);
    sim_result_free(&a);
    sim_result_free(&b);
}

static void test_dp_overlap(void **state)
{
    (void)state;
    SimChunkCost c[2];
    uniform(c, 2, 1.0, 2.0);
    SimStageCost st[2] = {{.optimizer_s = 0.25}, {.optimizer_s = 0.25}};
    for (int i = 0; i < 2; i++) {
        c[i].dp_grad_s = 1.0;
        c[i].dp_buckets = 4;
    }
    SimPipeline pl = {.stages = 2, .chunks = 1, .micro_batches = 4, .schedule = SIM_SCHED_1F1B,
                      .chunk = c, .stage = st, .dp_overlap = true};
    SimResult r;
    TsError err = {0};
    assert_int_equal(sim_pipeline_run(&pl, NULL, &r, &err), TS_OK);
    /* last backward is 2 s long, 4 buckets of 0.25 s: only the last bucket is exposed */
    NEAR(r.breakdown.dp_comm_exposed_s, 0.25, 1e-12);
    NEAR(r.iteration_time_s, 5 * 3.0 + 0.25 + 0.25, 1e-12);
    sim_result_free(&r);
    pl.dp_overlap = false;
    assert_int_equal(sim_pipeline_run(&pl, NULL, &r, &err), TS_OK);
    NEAR(r.breakdown.dp_comm_exposed_s, 1.0, 1e-12);
    sim_result_free(&r);
}

static void test_bad_pipeline(void **state)
{
    (void)state;
    SimChunkCost c[4];
    uniform(c, 4, 1, 1);
    SimPipeline pl = {.stages = 2, .chunks = 2, .micro_batches = 4, .schedule = SIM_SCHED_1F1B, .chunk = c};
    SimResult r;
    TsError err = {0};
    assert_int_equal(sim_pipeline_run(&pl, NULL, &r, &err), TS_ERR_PLAN);
    assert_string_equal(err.msg, "2 model chunks per stage need the interleaved schedule");
}

static void test_workspace_reuse_and_trace(void **state)
{
    (void)state;
    SimWork *w = sim_work_create();
    SimChunkCost c[8];
    uniform(c, 8, 1, 2);
    SimPipeline pl = {.stages = 4, .chunks = 2, .micro_batches = 8, .schedule = SIM_SCHED_INTERLEAVED,
                      .chunk = c, .record = true};
    SimResult r;
    TsError err = {0};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(sim_pipeline_run(&pl, w, &r, &err), TS_OK);
        assert_int_equal(r.n_spans, 4 * 2 * 8 * 2);
    }
    /* no two compute spans of one stage overlap */
    for (int64_t i = 0; i < r.n_spans; i++)
        for (int64_t j = i + 1; j < r.n_spans; j++) {
            const SimSpan *a = &r.spans[i], *b = &r.spans[j];
            if (a->stage != b->stage) continue;
            assert_true(a->end_s <= b->start_s + 1e-12 || b->end_s <= a->start_s + 1e-12);
        }
    sim_work_destroy(w);
    sim_work_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_example_1f1b),
        cmocka_unit_test(test_bubble_fractions),
        cmocka_unit_test(test_pp1_no_bubble),
        cmocka_unit_test(test_uneven_and_p2p),
        cmocka_unit_test(test_dp_overlap),
        cmocka_unit_test(test_bad_pipeline),
        cmocka_unit_test(test_workspace_reuse_and_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
