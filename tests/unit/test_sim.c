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

#include <stdio.h>

#include "trainsim/hw.h"
#include "trainsim/sim.h"
#include "../../src/sim/cost_int.h" /* white box: the span list */

#define NEAR(a, b, rel) assert_true(fabs((a) - (b)) <= (rel) * fabs(b) + 1e-12)

static void uniform(SimChunkCost *c, int n, double f, double b)
{
    for (int i = 0; i < n; i++) {
        memset(&c[i], 0, sizeof c[i]);
        c[i].fwd_s = c[i].compute_fwd_s = f;
        c[i].bwd_s = c[i].compute_bwd_s = b;
    }
}

static double run(int p, int v, int64_t m, PlanSchedule sch, const SimChunkCost *c, SimResult *r)
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
    NEAR(run(4, 1, 8, PLAN_SCHED_1F1B, c, &r), 33.0, 1e-12);
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
            run(p, 1, m, PLAN_SCHED_1F1B, c, &r);
            NEAR(r.bubble_fraction, (double)(p - 1) / (double)(m + p - 1), 1e-9);
            sim_result_free(&r);
            run(p, 1, m, PLAN_SCHED_GPIPE, c, &r);
            NEAR(r.bubble_fraction, (double)(p - 1) / (double)(m + p - 1), 1e-9);
            sim_result_free(&r);
            for (int v = 2; v <= 4; v++) {
                if (m % p) continue;
                uniform(c, p * v, 1.0 / v, 2.0 / v);
                run(p, v, m, PLAN_SCHED_INTERLEAVED, c, &r);
                NEAR(r.bubble_fraction, (double)(p - 1) / (double)(v * m + p - 1), 1e-9);
                sim_result_free(&r);
            }
        }
}

/* ZB-H1, DualPipe and DualPipeV on uniform stages with free transfers and
 * no EP traffic (an F&B pair is F + B): the critical stage's bubble is the
 * published one, sched_formula_bubble_s. Tolerance 1e-9 relative. */
static void test_published_bubbles(void **state)
{
    (void)state;
    static SimChunkCost c[16 * 2];
    /* ZB-H1's bubble holds for any W; DualPipe's and DualPipeV's published
     * ones for F = I = W (B = 2F), the case they are derived for: with
     * W = 0.8, B = 2, F = 1 the engine's orders idle 0.2 s less per rank pair */
    static const struct { PlanSchedule sch; int p, v; int64_t m; double f, b, w; } T[] = {
        {PLAN_SCHED_ZBH1, 4, 1, 16, 1.0, 2.0, 0.8},      {PLAN_SCHED_ZBH1, 8, 1, 32, 1.0, 2.0, 1.0},
        {PLAN_SCHED_ZBH1, 8, 1, 32, 1.0, 3.0, 0.5},      {PLAN_SCHED_DUALPIPE, 4, 2, 16, 1.0, 2.0, 1.0},
        {PLAN_SCHED_DUALPIPE, 8, 2, 32, 1.0, 2.0, 1.0},  {PLAN_SCHED_DUALPIPE, 16, 2, 64, 1.0, 2.0, 1.0},
        {PLAN_SCHED_DUALPIPEV, 4, 2, 16, 1.0, 2.0, 1.0}, {PLAN_SCHED_DUALPIPEV, 8, 2, 32, 1.0, 2.0, 1.0},
    };
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
        uniform(c, T[i].p * T[i].v, T[i].f, T[i].b);
        for (int k = 0; k < T[i].p * T[i].v; k++) c[k].wgrad_s = T[i].w;
        SimResult r;
        run(T[i].p, T[i].v, T[i].m, T[i].sch, c, &r);
        print_message("%s p %d m %lld: bubble %.6f s, published %.6f s\n", plan_sched_name(T[i].sch), T[i].p,
                      (long long)T[i].m, r.breakdown.bubble_s, r.sched_formula_bubble_s);
        NEAR(r.breakdown.bubble_s, r.sched_formula_bubble_s, 1e-9);
        sim_result_free(&r);
    }
}

static void test_pp1_no_bubble(void **state)
{
    (void)state;
    SimChunkCost c[1];
    uniform(c, 1, 0.5, 1.0);
    c[0].p2p_fwd_s = c[0].p2p_bwd_s = 0.3; /* ignored with one stage */
    SimResult r;
    NEAR(run(1, 1, 7, PLAN_SCHED_1F1B, c, &r), 7 * 1.5, 1e-12);
    assert_true(r.breakdown.bubble_s == 0);
    assert_true(r.breakdown.pp_comm_exposed_s == 0);
    sim_result_free(&r);
}

/* ZeRO-2 under a pipeline (SimPipeline.dp_shared): each backward's
 * reduce-scatters walked on the stage's timeline, by hand. One stage, F 1 s
 * and B 2 s of compute, 4 micro-batches, one layer whose reduce-scatter is
 * ready when the backward ends. 0.5 s: none queues; each but the last runs
 * beside the next forward (3 x 0.5 s at sigma 0.1), the last is exposed:
 * 12 + 0.15 + 0.5. 4 s, more than a micro-batch: they queue back to back
 * from 3 s to 19 s, beside 4 + 4 + 1 s of compute: 12 + 0.9 + 7. */
static void test_dp_shared_walk(void **state)
{
    (void)state;
    static const struct { double rs, iter, exposed, slow; } cases[] = {{0.5, 12.65, 0.5, 0.15}, {4.0, 19.9, 7.0, 0.9}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        SimChunkCost c;
        uniform(&c, 1, 1.0, 2.0);
        c.rs_layers = 1;
        c.rs_layer_s = cases[i].rs;
        SimStageCost st = {0};
        SimPipeline pl = {.stages = 1, .chunks = 1, .micro_batches = 4, .schedule = PLAN_SCHED_1F1B, .chunk = &c,
                          .stage = &st, .dp_overlap = true, .dp_shared = true, .overlap_slowdown = 0.1};
        SimResult r;
        TsError err = {0};
        assert_int_equal(sim_pipeline_run(&pl, NULL, &r, &err), TS_OK);
        NEAR(r.iteration_time_s, cases[i].iter, 1e-12);
        NEAR(r.breakdown.dp_comm_exposed_s, cases[i].exposed, 1e-12);
        NEAR(r.breakdown.overlap_slowdown_s, cases[i].slow, 1e-12);
        sim_result_free(&r);
    }
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
    double t0 = run(8, 1, 32, PLAN_SCHED_1F1B, c, &a);
    for (int i = 0; i < 8; i++) c[i].p2p_fwd_s = c[i].p2p_bwd_s = 0.01;
    double t1 = run(8, 1, 32, PLAN_SCHED_1F1B, c, &b);
    assert_true(t1 > t0);
    assert_true(b.breakdown.pp_comm_exposed_s > 0);
    /* breakdown sums to the iteration time */
    double sum = 0;
    for (int i = 0; i < SIM_BD_COUNT; i++) sum += sim_breakdown_get(&b.breakdown, i);
    NEAR(sum, t1, 1e-9);
    /* every stage's own breakdown sums to its end; the LM-head stage works
     * longest (32 x 4.5 s, all compute) and is named the slowest */
    for (int s = 0; s < 8; s++) {
        double ss = 0;
        for (int i = 0; i < SIM_BD_COUNT; i++) ss += sim_breakdown_get(&b.stages[s].breakdown, i);
        NEAR(ss, b.stages[s].end_s, 1e-9);
    }
    assert_int_equal(a.slowest_stage, 7);
    NEAR(a.stages[7].busy_s, 32 * 4.5, 1e-12);
    NEAR(a.stages[7].breakdown.compute_s, 32 * 4.5, 1e-12);
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
        c[i].dp_end_s = sim_dp_end_uniform(4, 1.0, c[i].bwd_s);
    }
    SimPipeline pl = {.stages = 2, .chunks = 1, .micro_batches = 4, .schedule = PLAN_SCHED_1F1B,
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

/* Dist-opt parameter gathers under the first forwards: 2 stages, 4
 * micro-batches of 1 s forward / 2 s backward (15 s without gathers), each
 * chunk 3 layers. A 3 s gather: stage 0 waits 1 s for its first layer, and
 * its last layer (1/3 s) cannot start before 3 s: 3 + 1/3 - 1 = 7/3 s late;
 * stage 1 starts its first forward at 1 s, 4/3 s late; the iteration 7/3 s
 * (exposed) plus 10 % of the hidden 2/3 s. A 0.2 s gather over 4 layers
 * hides all but the first layer's 0.05 s. Not overlapped: 3 s at the step. */
static void test_param_gather_overlap(void **state)
{
    (void)state;
    SimChunkCost c[2];
    uniform(c, 2, 1.0, 2.0);
    SimStageCost st[2];
    for (int i = 0; i < 2; i++) {
        c[i].param_gather_s = 3.0;
        c[i].gather_lag_s = sim_gather_lag_uniform(3.0, 3, c[i].fwd_s);
        st[i] = (SimStageCost){.param_gather_s = 3.0};
    }
    SimPipeline pl = {.stages = 2, .chunks = 1, .micro_batches = 4, .schedule = PLAN_SCHED_1F1B, .chunk = c,
                      .stage = st, .param_gather_overlap = true, .overlap_slowdown = 0.1};
    SimResult r;
    TsError err = {0};
    assert_int_equal(sim_pipeline_run(&pl, NULL, &r, &err), TS_OK);
    NEAR(r.breakdown.dp_comm_exposed_s, 7.0 / 3, 1e-12);
    NEAR(r.iteration_time_s, 15 + 7.0 / 3 + 0.1 * (3 - 7.0 / 3), 1e-12);
    sim_result_free(&r);
    for (int i = 0; i < 2; i++) {
        c[i].param_gather_s = st[i].param_gather_s = 0.2;
        c[i].gather_lag_s = sim_gather_lag_uniform(0.2, 4, c[i].fwd_s);
    }
    assert_int_equal(sim_pipeline_run(&pl, NULL, &r, &err), TS_OK);
    NEAR(r.breakdown.dp_comm_exposed_s, 0.05, 1e-12);
    NEAR(r.iteration_time_s, 15 + 0.05 + 0.1 * 0.15, 1e-12);
    sim_result_free(&r);
    pl.param_gather_overlap = false;
    assert_int_equal(sim_pipeline_run(&pl, NULL, &r, &err), TS_OK);
    NEAR(r.breakdown.dp_comm_exposed_s, 0.2, 1e-12);
    NEAR(r.iteration_time_s, 15 + 0.2, 1e-12);
    sim_result_free(&r);
}

static void test_bad_pipeline(void **state)
{
    (void)state;
    SimChunkCost c[4];
    uniform(c, 4, 1, 1);
    SimPipeline pl = {.stages = 2, .chunks = 2, .micro_batches = 4, .schedule = PLAN_SCHED_1F1B, .chunk = c};
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
    SimPipeline pl = {.stages = 4, .chunks = 2, .micro_batches = 8, .schedule = PLAN_SCHED_INTERLEAVED,
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

/* Megatron-Core's micro-batch groups (ModelParallelConfig's docstring of
 * microbatch_group_size_per_vp_stage: PP 2, VP 2, N 3, M 5 runs rank 0's
 * forwards as 0 1 2 0 1 2 3 4 3 4 over chunks 0 0 0 1 1 1 0 0 1 1); then
 * M 6 in groups of 3 and in the default groups of p = 2 on one work space,
 * so that the cached program of one cannot answer for the other. */
static void test_vpp_group_order(void **state)
{
    (void)state;
    SimWork *w = sim_work_create();
    SimChunkCost c[4];
    uniform(c, 4, 1, 2);
    static const struct { int64_t m, g; int mb[12], ch[12]; } CASES[] = {
        {5, 3, {0, 1, 2, 0, 1, 2, 3, 4, 3, 4}, {0, 0, 0, 1, 1, 1, 0, 0, 1, 1}},
        {6, 3, {0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}, {0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1}},
        {6, 0, {0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5}, {0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1}},
    };
    for (size_t k = 0; k < sizeof CASES / sizeof CASES[0]; k++) {
        SimPipeline pl = {.stages = 2, .chunks = 2, .micro_batches = CASES[k].m, .group = CASES[k].g,
                          .schedule = PLAN_SCHED_INTERLEAVED, .chunk = c, .record = true};
        SimResult r;
        TsError err = {0};
        assert_int_equal(sim_pipeline_run(&pl, w, &r, &err), TS_OK);
        int n = 0;
        for (int64_t i = 0; i < r.n_spans; i++) {
            const SimSpan *sp = &r.spans[i];
            if (sp->stage != 0 || sp->kind != 'F') continue;
            assert_int_equal(sp->micro_batch, CASES[k].mb[n]);
            assert_int_equal(sp->chunk, CASES[k].ch[n]);
            n++;
        }
        assert_int_equal(n, 2 * (int)CASES[k].m);
    }
    /* PyTorch's groups (torchtitan): m / max(1, m / p) micro-batches, below
     * p when m is. Makespans (F 1, B 2, free transfers) from a replica of
     * ScheduleInterleaved1F1B._calculate_single_rank_operations run with
     * each rank's ops in order: p 4, m 3 in one group of 3: 30; m 10 in two
     * groups of 5: 69; p 2, m 1: 12. */
    static const struct { int32_t p; int64_t m, g; double t; } PT[] = {{4, 3, 3, 30}, {4, 10, 5, 69}, {2, 1, 1, 12}};
    SimChunkCost c8[8];
    uniform(c8, 8, 1, 2);
    for (size_t k = 0; k < sizeof PT / sizeof PT[0]; k++) {
        SimPipeline pl = {.stages = PT[k].p, .chunks = 2, .micro_batches = PT[k].m, .group = PT[k].g,
                          .schedule = PLAN_SCHED_INTERLEAVED, .chunk = c8};
        SimResult r;
        TsError err = {0};
        assert_int_equal(sim_pipeline_run(&pl, w, &r, &err), TS_OK);
        assert_true(fabs(r.pipeline_time_s - PT[k].t) < 1e-9);
    }
    sim_work_destroy(w);
}

/* Megatron-Core's EP overlap inside its interleaved schedule (1f1b-a2a with
 * v > 1; schedules.py get_pp_rank_microbatches and get_schedule_table): PP
 * 2, VP 2, 4 micro-batches, rank 0. Warm-up 2(p - s - 1) + (v - 1)p = 4
 * forwards and one more; then each forward of the table as an F&B pair with
 * the backward after it; then the cool-down. */
static void count_pair(void *ctx, int32_t kf, int32_t kb, int64_t n) { ((int64_t *)ctx)[kf * 2 + kb] += n; }

static void test_a2a_interleaved_order(void **state)
{
    (void)state;
    enum { F = PLAN_TASK_F, B = PLAN_TASK_B, PF = PLAN_TASK_PF };
    static const int32_t want[16][3] = {
        {0, 0, F},  {1, 0, F}, {0, 1, F},  {1, 1, F}, {2, 0, F},                     /* warm-up + 1 */
        {3, 0, PF}, {0, 1, B}, {2, 1, PF}, {1, 1, B}, {3, 1, PF}, {0, 0, B},         /* pairs */
        {1, 0, B},  {2, 1, B}, {3, 1, B},  {2, 0, B}, {3, 0, B}};                    /* cool-down */
    assert_int_equal(plan_order_cap(PLAN_SCHED_1F1B_A2A, 4, 2), 16);
    int32_t o[16], fifo[16];
    assert_int_equal(plan_order(PLAN_SCHED_1F1B_A2A, 2, 2, 4, 0, 0, o, fifo), 16);
    for (int i = 0; i < 16; i++) {
        assert_int_equal(PLAN_TASK_MB(o[i]), want[i][0]);
        assert_int_equal(PLAN_TASK_CHUNK(o[i]), want[i][1]);
        assert_int_equal(PLAN_TASK_KIND(o[i]), want[i][2]);
    }
    /* the pair counts without the order: F0&B1, F1&B1, F1&B0 once each */
    int64_t n[4] = {0};
    plan_order_pairs(PLAN_SCHED_1F1B_A2A, 2, 2, 4, 0, 0, count_pair, n);
    assert_int_equal(n[0 * 2 + 1], 1);
    assert_int_equal(n[1 * 2 + 1], 1);
    assert_int_equal(n[1 * 2 + 0], 1);
    assert_int_equal(n[0], 0);
    /* one chunk: 1F1B's p - s - 1 warm-up forwards and one more */
    assert_int_equal(plan_order_warmup(PLAN_SCHED_1F1B_A2A, 4, 1, 8, 0, 1), 3);
    assert_int_equal(plan_order_warmup(PLAN_SCHED_1F1B_A2A, 4, 1, 2, 0, 0), 2);
    /* the engine runs it: every stage's tasks, no two of a stage at once */
    SimChunkCost c[4];
    uniform(c, 4, 1, 2);
    SimPipeline pl = {.stages = 2, .chunks = 2, .micro_batches = 4, .schedule = PLAN_SCHED_1F1B_A2A, .chunk = c,
                      .record = true};
    SimResult r;
    TsError err = {0};
    SimWork *w = sim_work_create();
    assert_int_equal(sim_pipeline_run(&pl, w, &r, &err), TS_OK);
    for (int64_t i = 0; i < r.n_spans; i++)
        for (int64_t j = i + 1; j < r.n_spans; j++) {
            const SimSpan *a = &r.spans[i], *b = &r.spans[j];
            if (a->stage == b->stage) assert_true(a->end_s <= b->start_s + 1e-12 || b->end_s <= a->start_s + 1e-12);
        }
    sim_work_destroy(w);
}

/* ---- the full simulator (presets from TRAINSIM_DATA) ---------------------- */
typedef struct Fix {
    ModelSpec m;
    ClusterSpec cl;
    HwModel hw;
    HwNet net;
} Fix;

static void fix_load(Fix *f, const char *model, const char *cluster, int64_t gpus)
{
    TsError err = {0};
    assert_int_equal(model_preset(model, &f->m, &err), TS_OK);
    assert_int_equal(hw_cluster_load(cluster, gpus, &f->cl, &err), TS_OK);
    hw_model_init(&f->hw);
    f->hw.gpu = f->cl.gpu;
    hw_net_init(&f->net, &f->cl);
}

static double sim_opt(Fix *f, const ParallelPlan *p, const SimOptions *o, SimResult *r)
{
    SimSetup in = {.model = &f->m, .plan = *p, .hw = &f->hw, .net = &f->net, .opt = *o};
    TsError err = {0};
    TsStatus st = sim_simulate(&in, NULL, r, &err);
    if (st) fprintf(stderr, "sim_simulate: %s\n", err.msg);
    assert_int_equal(st, TS_OK);
    double sum = 0;
    for (int i = 0; i < SIM_BD_COUNT; i++) sum += sim_breakdown_get(&r->breakdown, i);
    NEAR(sum, r->iteration_time_s, 1e-9); /* the breakdown always sums up */
    return r->iteration_time_s;
}

static double sim(Fix *f, const ParallelPlan *p, SimResult *r)
{
    SimOptions o;
    sim_options_init(&o);
    return sim_opt(f, p, &o, r);
}

static ParallelPlan plan(int64_t tp, int64_t pp, int64_t vpp, int64_t gpus, int64_t gb, int64_t seq)
{
    ParallelPlan p;
    plan_init(&p);
    p.tp = tp;
    p.pp = pp;
    p.vpp = vpp;
    p.gpus = gpus;
    p.global_batch = gb;
    p.seq = seq;
    if (vpp > 1) p.schedule = PLAN_SCHED_INTERLEAVED;
    return p;
}

static void test_more_bandwidth_never_slower(void **state)
{
    (void)state;
    static Fix f;
    fix_load(&f, "gpt3-175b", "dgx-a100", 1024);
    ParallelPlan ps[4] = {plan(8, 8, 1, 1024, 1536, 2048), plan(8, 8, 3, 1024, 1536, 2048),
                          plan(4, 16, 1, 1024, 512, 2048), plan(8, 4, 1, 1024, 256, 2048)};
    ps[1].dist_opt = true;
    ps[2].zero = 1;
    ps[3].recompute = PLAN_RECOMPUTE_FULL;
    for (int i = 0; i < 4; i++) {
        SimResult a, b, c;
        fix_load(&f, "gpt3-175b", "dgx-a100", 1024);
        double t0 = sim(&f, &ps[i], &a);
        f.net.cl.nic_bw_bytes_per_s *= 2; /* faster network */
        double t1 = sim(&f, &ps[i], &b);
        f.net.cl.scaleup_bw_bytes_per_s *= 2; /* and faster NVLink */
        double t2 = sim(&f, &ps[i], &c);
        assert_true(t1 <= t0 * (1 + 1e-12));
        assert_true(t2 <= t1 * (1 + 1e-12));
        sim_result_free(&a);
        sim_result_free(&b);
        sim_result_free(&c);
    }
}

static void test_pp1_no_bubble_full(void **state)
{
    (void)state;
    static Fix f;
    fix_load(&f, "llama3-8b", "dgx-h100", 16);
    ParallelPlan p = plan(2, 1, 1, 16, 64, 4096);
    SimResult r;
    sim(&f, &p, &r);
    assert_true(r.breakdown.bubble_s == 0 && r.breakdown.pp_comm_exposed_s == 0);
    sim_result_free(&r);
}

static void test_larger_batch_never_lowers_throughput(void **state)
{
    (void)state;
    static Fix f;
    fix_load(&f, "gpt3-175b", "dgx-h100", 1024);
    for (int v = 1; v <= 2; v++) {
        double prev = 0;
        for (int64_t gb = 128; gb <= 4096; gb *= 2) {
            ParallelPlan p = plan(8, 8, v == 2 ? 3 : 1, 1024, gb, 2048);
            p.dist_opt = true;
            SimResult r;
            sim(&f, &p, &r);
            assert_true(r.tokens_per_s >= prev * (1 - 1e-12));
            prev = r.tokens_per_s;
            sim_result_free(&r);
        }
    }
}

/* ZeRO-3 on an MoE model gathers the expert parameters too (over the
 * expert-data-parallel group): with ep = 1 every rank holds all 256 experts
 * of DeepSeek-V3, so the per-micro-batch gathers dominate the step. Found by
 * the sweep ranking a ZeRO-3, ep 1 plan first with no exposed DP time. */
static void test_zero3_gathers_experts(void **state)
{
    (void)state;
    static Fix f;
    fix_load(&f, "deepseek-v3", "hgx-h800", 2048);
    ParallelPlan p = plan(2, 1, 1, 2048, 4096, 4096);
    p.micro_batch = 4;
    p.zero = 3;
    p.recompute = PLAN_RECOMPUTE_FULL;
    SimResult r1, r8;
    sim(&f, &p, &r1);
    /* 335 G parameters per TP rank at 2 B, gathered twice: far over 5 s on 50 GB/s NICs */
    assert_true(r1.breakdown.dp_comm_exposed_s > 5.0);
    p.ep = 8; /* experts sharded 8 ways: less to gather, faster */
    sim(&f, &p, &r8);
    assert_true(r8.iteration_time_s < r1.iteration_time_s);
    sim_result_free(&r1);
    sim_result_free(&r8);
}

static void test_recompute_costs_time(void **state)
{
    (void)state;
    static Fix f;
    fix_load(&f, "llama3-70b", "dgx-h100", 64);
    ParallelPlan p = plan(8, 4, 1, 64, 64, 4096);
    SimResult a, b, c;
    double t0 = sim(&f, &p, &a);
    p.recompute = PLAN_RECOMPUTE_SELECTIVE;
    double t1 = sim(&f, &p, &b);
    p.recompute = PLAN_RECOMPUTE_FULL;
    double t2 = sim(&f, &p, &c);
    assert_true(t0 < t1 && t1 < t2);
    assert_true(c.hfu > c.mfu && a.hfu == a.mfu);
    /* full recompute repeats the forward: about a third more compute */
    assert_true(c.breakdown.recompute_s > 0.25 * c.breakdown.compute_s);
    sim_result_free(&a);
    sim_result_free(&b);
    sim_result_free(&c);
}

/* Straggler: spread/2.85*sqrt(2 ln n), 0 for one GPU, growing with n
 * (tolerance 0.5 % relative). */
static void test_straggler(void **state)
{
    (void)state;
    assert_true(sim_straggler(0.05, 1) == 0 && sim_straggler(0, 64) == 0);
    NEAR(sim_straggler(0.05, 64), 0.0506, 0.005);
    NEAR(sim_straggler(0.05, 8), 0.0358, 0.005);
    assert_true(sim_straggler(0.05, 1024) > sim_straggler(0.05, 64));
}

/* The tensor factor: clock / sustained clock times the straggler's share
 * on a node or more; a job of one GPU at the preset's one-GPU clock where it
 * has one (no straggler), else at the sustained clock. */
static void test_tensor_factor(void **state)
{
    (void)state;
    static Fix f;
    fix_load(&f, "llama3-8b", "dgx-h100", 8);
    SimOptions o;
    sim_options_init(&o);
    GpuSpec g = f.hw.gpu;
    assert_true(g.single_clock_mhz > g.sustained_clock_mhz);
    NEAR(sim_tensor_factor(&g, &o, 1), g.clock_mhz / g.single_clock_mhz, 1e-12);
    NEAR(sim_tensor_factor(&g, &o, 8), g.clock_mhz / g.sustained_clock_mhz * (1 + sim_straggler(o.gpu_spread, 8)),
         1e-12);
    g.single_clock_mhz = 0;
    NEAR(sim_tensor_factor(&g, &o, 1), g.clock_mhz / g.sustained_clock_mhz, 1e-12);
}

/* A lower sustained clock slows a compute-bound step, at most by the clock
 * ratio; partial recompute lies between none and full. */
static void test_sustained_clock_and_partial_recompute(void **state)
{
    (void)state;
    static Fix f;
    fix_load(&f, "llama3-8b", "dgx-h100", 8);
    ParallelPlan p = plan(1, 1, 1, 8, 32, 4096);
    SimResult a, b;
    f.hw.gpu.sustained_clock_mhz = 0;
    double t0 = sim(&f, &p, &a);
    f.hw.gpu.sustained_clock_mhz = f.hw.gpu.clock_mhz / 1.2;
    double t1 = sim(&f, &p, &b);
    assert_true(t1 > 1.1 * t0 && t1 <= 1.2 * t0 * (1 + 1e-12));
    sim_result_free(&a);
    sim_result_free(&b);
    fix_load(&f, "llama3-70b", "dgx-h100", 64);
    ParallelPlan q = plan(8, 4, 1, 64, 64, 4096);
    SimResult c, d, e;
    double r0 = sim(&f, &q, &c);
    q.recompute = PLAN_RECOMPUTE_FULL;
    q.recompute_layers = 5; /* of 20 per stage */
    double r1 = sim(&f, &q, &d);
    q.recompute_layers = 0;
    double r2 = sim(&f, &q, &e);
    assert_true(r0 < r1 && r1 < r2);
    NEAR(d.breakdown.recompute_s, 0.25 * e.breakdown.recompute_s, 1e-3 * e.breakdown.recompute_s);
    sim_result_free(&c);
    sim_result_free(&d);
    sim_result_free(&e);
}

/* Tied word embeddings split over the first and last stage: their fp32
 * gradients are all-reduced between those two stages (2 ranks, across
 * nodes here), on those stages only; untied models have no such step. */
static void test_tied_embedding_sync(void **state)
{
    (void)state;
    static Fix f;
    fix_load(&f, "gpt3-175b", "dgx-a100", 128);
    ParallelPlan p = plan(8, 8, 1, 128, 256, 2048);
    SimResult r;
    sim(&f, &p, &r);
    double bytes = (double)(model_padded_vocab(&f.m, 8) / 8) * (double)f.m.hidden * 4.0;
    double want = hw_coll_time_s(&f.net, TS_COLL_ALLREDUCE, bytes, 2, 2, 1, HW_GROUP_PP);
    assert_true(want > 0);
    NEAR(r.stages[0].embed_sync_s, want, 1e-12);
    NEAR(r.stages[7].embed_sync_s, want, 1e-12);
    for (int s = 1; s < 7; s++) assert_true(r.stages[s].embed_sync_s == 0);
    sim_result_free(&r);
    fix_load(&f, "llama3-70b", "dgx-a100", 128);
    sim(&f, &p, &r);
    for (int s = 0; s < 8; s++) assert_true(r.stages[s].embed_sync_s == 0);
    sim_result_free(&r);
}

/* DeepSpeed's pipeline engine: blocking p2p of the whole activation is
 * charged on the compute stream (2 transfers per neighbour per micro-batch),
 * the all-reduce after the flush and the BF16-optimizer accumulation only
 * slow the step down; with nothing to send, reduce or accumulate (pp 1,
 * dp 1, fp16) it changes nothing. */
static void test_ds_pipe(void **state)
{
    (void)state;
    static Fix f;
    fix_load(&f, "gpt3-175b", "dgx-a100", 128);
    ParallelPlan p = plan(8, 8, 1, 128, 256, 2048);
    p.zero = 1;
    p.recompute = PLAN_RECOMPUTE_FULL;
    SimOptions o;
    sim_options_init(&o);
    ParallelPlan pd = p;
    pd.framework = PLAN_FRAMEWORK_DEEPSPEED;
    SimResult a, b, c;
    double t0 = sim_opt(&f, &p, &o, &a), t1 = sim_opt(&f, &pd, &o, &b);
    assert_true(t1 > t0);
    /* the critical stage sends and receives 2048 x 12288 x 2 B per TP rank,
     * twice per neighbour, 128 micro-batches */
    int s = b.critical_stage, sides = (s > 0) + (s < 7);
    double x = hw_p2p_time_s(&f.net, 2048.0 * 12288.0 * 2.0, true);
    assert_true(b.breakdown.pp_comm_exposed_s >= 128.0 * 2.0 * sides * x * (1 - 1e-9));
    /* the BF16 optimizer keeps fp32 gradients beside the bf16 ones: 6 B, not 2 */
    NEAR(b.memory.gradients_bytes, 3.0 * a.memory.gradients_bytes, 1e-9 * b.memory.gradients_bytes);
    /* bf16: the fp32 accumulation adds compute; fp16 does not */
    pd.dtype = TS_DTYPE_FP16;
    sim_opt(&f, &pd, &o, &c);
    assert_true(b.breakdown.compute_s > c.breakdown.compute_s * 1.02);
    sim_result_free(&a);
    sim_result_free(&b);
    sim_result_free(&c);
    fix_load(&f, "llama3-8b", "dgx-a100", 8);
    ParallelPlan q = plan(8, 1, 1, 8, 8, 4096);
    q.dtype = TS_DTYPE_FP16;
    ParallelPlan qd = q;
    qd.framework = PLAN_FRAMEWORK_DEEPSPEED;
    double u0 = sim_opt(&f, &q, &o, &a), u1 = sim_opt(&f, &qd, &o, &b);
    assert_true(u0 == u1);
    sim_result_free(&a);
    sim_result_free(&b);
}

/* sim_lower_bound never exceeds the simulated iteration time, over a grid
 * of schedules, stage counts, micro-batches, ZeRO stages and recompute modes
 * (even and uneven splits), and is not far below it. */
static void test_lower_bound(void **state)
{
    (void)state;
    Fix f;
    fix_load(&f, "llama3-70b", "dgx-h100", 256);
    SimWork *w = sim_work_create();
    int n = 0;
    for (int pp = 1; pp <= 16; pp *= 2)
        for (int vpp = 1; vpp <= 3; vpp++)
            for (int mb = 1; mb <= 2; mb++)
                for (int z = 0; z <= 3; z++)
                    for (int rc = 0; rc < 3; rc++) {
                        if ((vpp > 1 && pp == 1) || (z >= 2 && pp > 1)) continue;
                        ParallelPlan p = plan(8, pp, vpp, 256, 256, 4096);
                        p.micro_batch = mb;
                        p.zero = z;
                        p.uneven = true;
                        p.recompute = rc == 0 ? PLAN_RECOMPUTE_NONE : rc == 1 ? PLAN_RECOMPUTE_SELECTIVE
                                                                               : PLAN_RECOMPUTE_FULL;
                        if (vpp > 1) p.schedule = PLAN_SCHED_INTERLEAVED;
                        SimSetup in = {.model = &f.m, .plan = p, .hw = &f.hw, .net = &f.net};
                        sim_options_init(&in.opt);
                        TsError err = {0};
                        double lb = -1;
                        if (sim_lower_bound(&in, w, &lb, &err) != TS_OK) continue; /* invalid plan */
                        SimResult r;
                        in.plan = p;
                        assert_int_equal(sim_simulate(&in, w, &r, &err), TS_OK);
                        assert_true(lb > 0);
                        assert_true(lb <= r.iteration_time_s * (1 + 1e-12));
                        assert_true(lb >= 0.5 * r.iteration_time_s); /* and useful */
                        n++;
                    }
    assert_true(n > 100);
    /* the EP overlap's pairs, without stages and inside the interleaved schedule */
    Fix g;
    fix_load(&g, "mixtral-8x7b", "dgx-h100", 64);
    int na = 0;
    for (int pp = 1; pp <= 4; pp *= 2)
        for (int vpp = 1; vpp <= 3; vpp++) {
            if ((vpp > 1) != (pp > 1)) continue;
            ParallelPlan p = plan(2, pp, vpp, 64, 128, 4096);
            p.ep = 8;
            p.uneven = true;
            p.schedule = PLAN_SCHED_1F1B_A2A;
            SimSetup in = {.model = &g.m, .plan = p, .hw = &g.hw, .net = &g.net};
            sim_options_init(&in.opt);
            TsError err = {0};
            double lb = -1;
            assert_int_equal(sim_lower_bound(&in, w, &lb, &err), TS_OK);
            SimResult r;
            in.plan = p;
            assert_int_equal(sim_simulate(&in, w, &r, &err), TS_OK);
            assert_true(lb > 0 && lb <= r.iteration_time_s * (1 + 1e-12) && lb >= 0.5 * r.iteration_time_s);
            na++;
        }
    assert_int_equal(na, 5);
    sim_work_destroy(w);
}

/* The CP exchange (--cp-comm): the ring hides its steps under the attention
 * blocks, the all-gather and the all-to-all are exposed (forward and
 * backward), the all-to-all needs the heads per TP rank divisible by cp. */
static void test_cp_comm(void **state)
{
    (void)state;
    Fix f;
    fix_load(&f, "llama3-70b", "dgx-h100", 64);
    ParallelPlan p = plan(4, 2, 1, 64, 16, 32768);
    p.cp = 2;
    SimOptions o;
    sim_options_init(&o);
    SimResult r[3];
    double t[3];
    for (int c = 0; c < 3; c++) {
        o.cp_comm = (SimCpComm)c;
        t[c] = sim_opt(&f, &p, &o, &r[c]);
    }
    assert_true(r[SIM_CP_P2P].breakdown.cp_comm_exposed_s < r[SIM_CP_ALLGATHER].breakdown.cp_comm_exposed_s);
    assert_true(r[SIM_CP_ALLGATHER].breakdown.cp_comm_exposed_s > 0 && r[SIM_CP_A2A].breakdown.cp_comm_exposed_s > 0);
    assert_true(t[SIM_CP_P2P] < t[SIM_CP_ALLGATHER]);
    /* the same model FLOPs whichever way K/V travel */
    NEAR(r[SIM_CP_A2A].model_flops_per_iteration, r[SIM_CP_P2P].model_flops_per_iteration, 1e-12);
    for (int c = 0; c < 3; c++) sim_result_free(&r[c]);
    /* TP 8 leaves one KV head per rank: no all-to-all over cp 2 */
    p = plan(8, 2, 1, 64, 16, 32768);
    p.cp = 2;
    o.cp_comm = SIM_CP_A2A;
    SimSetup in = {.model = &f.m, .plan = p, .hw = &f.hw, .net = &f.net, .opt = o};
    TsError err = {0};
    SimResult bad;
    assert_int_equal(sim_simulate(&in, NULL, &bad, &err), TS_ERR_PLAN);
    assert_non_null(strstr(err.msg, "--cp-comm a2a"));
    SimCpComm cc;
    assert_true(sim_cp_comm_parse("allgather", &cc) && cc == SIM_CP_ALLGATHER);
    assert_false(sim_cp_comm_parse("ring", &cc));
    assert_string_equal(sim_cp_comm_name(SIM_CP_A2A), "a2a");
}

/* Dropout follows the model's probabilities: p = 0 runs no kernel and keeps
 * no mask (OPT has no attention dropout, BLOOM none at all). */
/* The work-evening split (balance.c): 3 dense layers of work 1 then 58 MoE
 * layers of work 2 over 16 stages, the last stage carrying 3 of extra work
 * (heads): 122 of work over 16 stages (mean 7.6), so the best split's
 * busiest stage is 8 (four MoE layers); a bound under it finds none (one
 * check); a uniform model fills the stages evenly. */
static void test_balance_layers(void **state)
{
    (void)state;
    double w[61];
    for (int i = 0; i < 61; i++) w[i] = i < 3 ? 1.0 : 2.0;
    SimBalance b;
    assert_true(sim_balance_layers(w, 61, 16, 0.0, 3.0, 0, &b));
    assert_int_equal(b.n, 16);
    int sum = 0;
    double busiest = 0;
    for (int s = 0, l = 0; s < 16; s++) {
        double load = s == 15 ? 3.0 : 0;
        for (int k = 0; k < b.layers[s]; k++) load += w[l++];
        sum += b.layers[s];
        busiest = load > busiest ? load : busiest;
    }
    assert_int_equal(sum, 61);
    assert_true(fabs(b.busiest_s - 8.0) < 1e-12);
    assert_true(fabs(busiest - b.busiest_s) < 1e-12);
    assert_false(sim_balance_layers(w, 61, 16, 0.0, 3.0, 7.9, &b));
    assert_true(sim_balance_layers(w, 61, 16, 0.0, 3.0, 8.1, &b));
    double u[96];
    for (int i = 0; i < 96; i++) u[i] = 0.5;
    assert_true(sim_balance_layers(u, 96, 8, 0.0, 0.0, 0, &b));
    for (int s = 0; s < 8; s++) assert_int_equal(b.layers[s], 12);
    assert_false(sim_balance_layers(u, 4, 8, 0.0, 0.0, 0, &b)); /* fewer layers than stages */
}

static void test_dropout_probabilities(void **state)
{
    (void)state;
    static Fix f;
    fix_load(&f, "gpt3-5b", "dgx-a100", 8);
    ParallelPlan p = plan(2, 1, 1, 8, 16, 2048);
    p.flash_attn = false;
    SimOptions o;
    sim_options_init(&o);
    SimResult r[3];
    double t[3], act[3];
    double probs[3][2] = {{0.1, 0.1}, {0.1, 0.0}, {0.0, 0.0}};
    for (int i = 0; i < 3; i++) {
        f.m.hidden_dropout = probs[i][0];
        f.m.attn_dropout = probs[i][1];
        t[i] = sim_opt(&f, &p, &o, &r[i]);
        act[i] = r[i].memory.activations_bytes;
        sim_result_free(&r[i]);
    }
    assert_true(t[1] < t[0] && t[2] < t[1]);   /* S x S dropout, then the hidden ones */
    assert_true(act[1] < act[0] && act[2] < act[1]);
    /* under FlashAttention the attention dropout is inside the kernel: its
     * draws take time (hw_attn_dropout_time_s), no S x S mask is stored */
    p.flash_attn = true;
    f.m.hidden_dropout = 0.1;
    f.m.attn_dropout = 0.1;
    double with = sim_opt(&f, &p, &o, &r[0]), act_with = r[0].memory.activations_bytes;
    sim_result_free(&r[0]);
    f.m.attn_dropout = 0;
    assert_true(sim_opt(&f, &p, &o, &r[0]) < with);
    NEAR(r[0].memory.activations_bytes, act_with, 1e-12);
    sim_result_free(&r[0]);
}

/* A full span list: back-to-back spans (a stream's queue) merge, which
 * meets the same compute; with none back to back the oldest goes. */
static void test_span_list_full(void **state)
{
    (void)state;
    SimSpans a = {0}, b = {0};
    for (int i = 0; i < SIM_SPANS; i++) sim_spans_push(&a, i, i + 1, false); /* a queue: each starts as one ends */
    for (int i = 0; i < SIM_SPANS; i++) sim_spans_push(&b, 2 * i, 2 * i + 1, false); /* gaps between */
    sim_spans_push(&a, SIM_SPANS, SIM_SPANS + 1, false);
    sim_spans_push(&b, 2 * SIM_SPANS, 2 * SIM_SPANS + 1, false);
    assert_int_equal(a.n, SIM_SPANS);
    assert_true(a.s[0] == 0 && a.e[0] == 2 && a.s[1] == 2 && a.e[SIM_SPANS - 1] == SIM_SPANS + 1);
    assert_int_equal(b.n, SIM_SPANS);
    assert_true(b.s[0] == 2 && b.e[SIM_SPANS - 1] == 2 * SIM_SPANS + 1);
    /* the merged queue still meets all of a compute window over it */
    SimSpans c = a;
    assert_true(fabs(sim_spans_walk(&c, 0, SIM_SPANS + 1, NULL, true) - (SIM_SPANS + 1)) < 1e-12);
}

static void test_bad_plan_is_plan_error(void **state)
{
    (void)state;
    static Fix f;
    fix_load(&f, "gpt2", "dgx-h100", 8);
    ParallelPlan p = plan(5, 1, 1, 5, 5, 1024);
    SimSetup in = {.model = &f.m, .plan = p, .hw = &f.hw, .net = &f.net};
    sim_options_init(&in.opt);
    SimResult r;
    TsError err = {0};
    assert_int_equal(sim_simulate(&in, NULL, &r, &err), TS_ERR_PLAN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_example_1f1b),
        cmocka_unit_test(test_bubble_fractions),
        cmocka_unit_test(test_published_bubbles),
        cmocka_unit_test(test_pp1_no_bubble),
        cmocka_unit_test(test_uneven_and_p2p),
        cmocka_unit_test(test_dp_shared_walk),
        cmocka_unit_test(test_dp_overlap), cmocka_unit_test(test_param_gather_overlap),
        cmocka_unit_test(test_a2a_interleaved_order),
        cmocka_unit_test(test_bad_pipeline),
        cmocka_unit_test(test_workspace_reuse_and_trace), cmocka_unit_test(test_vpp_group_order),
        cmocka_unit_test(test_more_bandwidth_never_slower),
        cmocka_unit_test(test_pp1_no_bubble_full),
        cmocka_unit_test(test_larger_batch_never_lowers_throughput),
        cmocka_unit_test(test_recompute_costs_time),
        cmocka_unit_test(test_zero3_gathers_experts),
        cmocka_unit_test(test_straggler),
        cmocka_unit_test(test_tensor_factor),
        cmocka_unit_test(test_sustained_clock_and_partial_recompute),
        cmocka_unit_test(test_tied_embedding_sync),
        cmocka_unit_test(test_ds_pipe),
        cmocka_unit_test(test_lower_bound),
        cmocka_unit_test(test_cp_comm),
        cmocka_unit_test(test_balance_layers),
        cmocka_unit_test(test_dropout_probabilities),
        cmocka_unit_test(test_bad_plan_is_plan_error), cmocka_unit_test(test_span_list_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
