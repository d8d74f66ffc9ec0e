/* test_sim_periodic.c — the schedule engine's periodic fast path (steady
 * state detected and extrapolated) against the full pass (every micro-batch
 * simulated) on random pipelines: uneven stages, uneven layer splits (tied
 * middle stages), pipeline transfers, DP buckets, GPipe / 1F1B /
 * interleaved, 1 to 4096 micro-batches; and ZB-H1, DualPipe and DualPipeV
 * (W tasks, F&B pairs with EP all-to-alls, DP buckets keyed off a W).
 * Tolerance: 1e-9 relative for the iteration time, the pipeline time and
 * every breakdown term and per-stage figure, with a floor of 1e-12 of the
 * iteration time for terms that round to ~0 in one pass and 0 in the other. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "trainsim/sim.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static double rnd(void) /* xorshift64*, [0, 1) */
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (double)((rng * 2685821657736338717ull) >> 11) * (1.0 / 9007199254740992.0);
}

static void close_to(double a, double b, double scale, const char *what, int inst)
{
    double tol = 1e-9 * fmax(fabs(a), fabs(b)) + 1e-12 * scale;
    if (fabs(a - b) > tol) {
        print_error("instance %d: %s fast %.17g full %.17g\n", inst, what, a, b);
        fail();
    }
}

static void compare(const SimResult *f, const SimResult *r, int inst)
{
    double T = r->iteration_time_s;
    close_to(f->iteration_time_s, r->iteration_time_s, T, "iteration_time_s", inst);
    close_to(f->pipeline_time_s, r->pipeline_time_s, T, "pipeline_time_s", inst);
    close_to(f->bubble_fraction, r->bubble_fraction, 1, "bubble_fraction", inst);
    for (int i = 0; i < SIM_BD_COUNT; i++)
        close_to(sim_breakdown_get(&f->breakdown, i), sim_breakdown_get(&r->breakdown, i), T, sim_breakdown_key(i),
                 inst);
    assert_int_equal(f->n_stages, r->n_stages);
    for (int s = 0; s < r->n_stages; s++) {
        close_to(f->stages[s].pipe_end_s, r->stages[s].pipe_end_s, T, "stage pipe_end_s", inst);
        close_to(f->stages[s].end_s, r->stages[s].end_s, T, "stage end_s", inst);
        close_to(f->stages[s].dp_exposed_s, r->stages[s].dp_exposed_s, T, "stage dp_exposed_s", inst);
    }
}

/* One random pipeline; returns whether the fast path was taken. forced:
 * a schedule of plan_order's (zb-h1, dualpipe, dualpipev) instead of the
 * drawn one, with its shape (2 chunks, m >= 2p), W tasks and EP
 * all-to-alls; -1: the drawn one. */
static bool one(int inst, SimWork *wf, SimWork *wr, int forced)
{
    static SimChunkCost c[64 * 8];
    static SimStageCost st[64];
    int32_t p = 1 + (int32_t)(rnd() * 16), v = 1;
    if (rnd() < 0.1) p = 32;
    PlanSchedule sch = rnd() < 0.2 ? PLAN_SCHED_GPIPE : rnd() < 0.5 ? PLAN_SCHED_1F1B : PLAN_SCHED_INTERLEAVED;
    if (sch == PLAN_SCHED_INTERLEAVED) v = 2 + (int32_t)(rnd() * 3);
    int64_t m = (int64_t)floor(exp(rnd() * log(4096.0))); /* 1 .. 4096, log-uniform */
    if (m < 1) m = 1;
    if (sch == PLAN_SCHED_INTERLEAVED) m = (m + p - 1) / p * p; /* whole groups (Megatron's rule) */
    if (forced >= 0) {
        sch = (PlanSchedule)forced;
        v = sch == PLAN_SCHED_ZBH1 || sch == PLAN_SCHED_1F1B_A2A ? 1 : 2;
        if (sch == PLAN_SCHED_DUALPIPE) p += p % 2, m += m % 2;
        if (sch != PLAN_SCHED_ZBH1 && m < 2 * p) m = 2 * p;
    }
    double base_f = 0.5 + rnd(), p2p = rnd() < 0.3 ? 0 : 0.2 * rnd() * base_f;
    bool even = rnd() < 0.3; /* uniform stages with transfers repeat every p rounds, not every round */
    /* an uneven layer split: the middle chunks tied, the first and last (and
     * sometimes the second and second-to-last) one layer lighter; such
     * pipelines repeat every (tied span) micro-batches and settle late */
    bool split = !even && rnd() < 0.4;
    int32_t light = rnd() < 0.5 ? 1 : 2;
    for (int32_t i = 0; i < p * v; i++) {
        SimChunkCost *k = &c[i];
        memset(k, 0, sizeof *k);
        double f = base_f * (even || split || rnd() < 0.5 ? 1.0 : 0.8 + 0.4 * rnd()); /* uneven stages */
        if (split && (i < light || i >= p * v - light)) f *= 5.0 / 6.0;
        k->compute_fwd_s = f;
        k->compute_bwd_s = 2 * f;
        k->recompute_s = rnd() < 0.3 ? 0.3 * f : 0;
        k->tp_exposed_s = 0.1 * f * rnd();
        k->fwd_s = k->compute_fwd_s + 0.5 * k->tp_exposed_s;
        k->bwd_s = k->compute_bwd_s + k->recompute_s + 0.5 * k->tp_exposed_s;
        k->p2p_fwd_s = k->p2p_bwd_s = p2p;
        k->dp_grad_s = rnd() < 0.5 ? 4 * f * rnd() : 0;
        k->dp_end_s = sim_dp_end_uniform(1 + (int32_t)(rnd() * 8), k->dp_grad_s, k->bwd_s);
        /* overlapped parameter gathers: sometimes longer than the first
         * forward (the start-up delay reads the first forwards' starts) */
        k->param_gather_s = rnd() < 0.5 ? 3 * f * rnd() : 0;
        k->gather_lag_s = sim_gather_lag_uniform(k->param_gather_s, (int32_t)(rnd() * 6), k->fwd_s);
    }
    for (int32_t i = 0; forced >= 0 && i < p * v; i++) { /* W tasks, EP all-to-alls */
        SimChunkCost *k = &c[i];
        k->wgrad_s = k->compute_bwd_s * (0.3 + 0.3 * rnd());
        k->ep_fwd_s = rnd() < 0.5 ? 0.2 * k->fwd_s * rnd() : 0;
        k->ep_bwd_s = 2 * k->ep_fwd_s;
        k->ep_exposed_s = k->ep_fwd_s + k->ep_bwd_s;
        k->head_wgrad_s = i == p * v - 1 ? 0.1 * k->wgrad_s : 0;
        k->dp_end_w_s = sim_dp_end_uniform(1 + (int32_t)(rnd() * 8), k->dp_grad_s, k->wgrad_s - k->head_wgrad_s);
    }
    if (split) {
        c[p * v - 1].fwd_s += 0.04 * base_f; /* a small LM head: the last chunk stays lighter */
        c[p * v - 1].bwd_s += 0.08 * base_f;
    } else if (!even) {
        c[0].fwd_s += 0.2 * base_f; /* embedding */
        c[p * v - 1].fwd_s += 0.4 * base_f; /* LM head and loss */
        c[p * v - 1].bwd_s += 0.8 * base_f;
    }
    for (int32_t s = 0; s < p; s++) {
        st[s] = (SimStageCost){.optimizer_s = 0.1 * rnd()};
        for (int32_t k = 0; k < v; k++) st[s].param_gather_s += c[s * v + k].param_gather_s;
    }
    SimPipeline pl = {.stages = p, .chunks = v, .micro_batches = m, .schedule = sch, .chunk = c, .stage = st,
                      .dp_overlap = rnd() < 0.8, .param_gather_overlap = rnd() < 0.5, .overlap_slowdown = 0.1,
                      .pair_sm_share = 20.0 / 132.0};
    SimResult fast, full;
    TsError err = {0};
    if (sim_pipeline_run(&pl, wf, &fast, &err) != TS_OK) print_error("instance %d: %s\n", inst, err.msg);
    assert_int_equal(err.code, TS_OK);
    pl.full_pass = true;
    assert_int_equal(sim_pipeline_run(&pl, wr, &full, &err), TS_OK);
    assert_false(full.periodic);
    compare(&fast, &full, inst);
    return fast.periodic;
}

static void test_fast_equals_full(void **state)
{
    (void)state;
    SimWork *wf = sim_work_create(), *wr = sim_work_create();
    int n_fast = 0, n = getenv("TS_PERIODIC_N") ? atoi(getenv("TS_PERIODIC_N")) : 300;
    for (int i = 0; i < n; i++) n_fast += one(i, wf, wr, -1);
    /* about half the instances have enough micro-batches for the fast path */
    print_message("fast path taken on %d of %d random pipelines\n", n_fast, n);
    assert_true(n_fast > n / 5);
    sim_work_destroy(wf);
    sim_work_destroy(wr);
}

/* The same for the schedules of plan_order, on one work space each side
 * (their programs cached beside the others'). */
static void test_fast_equals_full_ordered(void **state)
{
    (void)state;
    static const PlanSchedule sch[] = {PLAN_SCHED_ZBH1, PLAN_SCHED_DUALPIPE, PLAN_SCHED_DUALPIPEV, PLAN_SCHED_1F1B_A2A};
    SimWork *wf = sim_work_create(), *wr = sim_work_create();
    int n = getenv("TS_PERIODIC_N") ? atoi(getenv("TS_PERIODIC_N")) : 300;
    for (int k = 0; k < 4; k++) {
        int n_fast = 0;
        for (int i = 0; i < n / 2; i++) n_fast += one(1000 * (k + 1) + i, wf, wr, (int)sch[k]);
        print_message("%s: fast path taken on %d of %d random pipelines\n", plan_sched_name(sch[k]), n_fast, n / 2);
        assert_true(n_fast > n / 10);
    }
    sim_work_destroy(wf);
    sim_work_destroy(wr);
}

/* Long uniform pipelines: the fast path is taken and the bubble fractions
 * are the closed forms. */
static void test_fast_closed_forms(void **state)
{
    (void)state;
    static SimChunkCost c[8 * 4];
    for (int i = 0; i < 8 * 4; i++) c[i] = (SimChunkCost){.fwd_s = 1, .bwd_s = 2, .compute_fwd_s = 1, .compute_bwd_s = 2};
    SimStageCost st[8] = {{0}};
    SimResult r;
    TsError err = {0};
    SimPipeline a = {.stages = 8, .chunks = 1, .micro_batches = 2048, .schedule = PLAN_SCHED_1F1B, .chunk = c, .stage = st};
    assert_int_equal(sim_pipeline_run(&a, NULL, &r, &err), TS_OK);
    assert_true(r.periodic);
    assert_true(fabs(r.iteration_time_s - 3.0 * (2048 + 7)) < 1e-9 * r.iteration_time_s);
    assert_true(fabs(r.bubble_fraction - 7.0 / (2048 + 7)) < 1e-9);
    sim_result_free(&r);
    SimPipeline b = {.stages = 8, .chunks = 4, .micro_batches = 2048, .schedule = PLAN_SCHED_INTERLEAVED, .chunk = c,
                     .stage = st};
    for (int i = 0; i < 8 * 4; i++) c[i] = (SimChunkCost){.fwd_s = 0.25, .bwd_s = 0.5, .compute_fwd_s = 0.25, .compute_bwd_s = 0.5};
    assert_int_equal(sim_pipeline_run(&b, NULL, &r, &err), TS_OK);
    assert_true(r.periodic);
    assert_true(fabs(r.bubble_fraction - 7.0 / (4.0 * 2048 + 7)) < 1e-9);
    sim_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fast_equals_full),
        cmocka_unit_test(test_fast_equals_full_ordered),
        cmocka_unit_test(test_fast_closed_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
