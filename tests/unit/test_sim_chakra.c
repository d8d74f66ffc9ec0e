/* sim_replay_chakra on trace sets written by the Chakra writer from
 * hand-built task graphs whose answer is known in closed form: a collective
 * that waits for its late rank, a pipeline hand-off, a receive/send cycle
 * across ranks (deadlock), a collective type ASTRA-sim does not run, and the
 * agreement with the task-graph replay of the same graph. Times from the hw
 * model (hw_coll_time_s, hw_p2p_time_s) on the dgx-h100 preset; durations are
 * whole microseconds (Chakra's unit); tolerance 1e-12 s. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trainsim/report.h"
#include "trainsim/sim.h"
#include "trainsim/workload.h"

#define NEAR(a, b) assert_true(fabs((a) - (b)) <= 1e-12)

static HwModel hw;
static HwNet net;
static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/ts_chakra_XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* A two-stage workload (ranks 0 and 1) on dgx-h100, hw and net loaded. */
static Workload *two_ranks(void)
{
    ClusterSpec cl;
    TsError err = {0};
    assert_int_equal(hw_cluster_load("dgx-h100", 2, &cl, &err), TS_OK);
    hw_net_init(&net, &cl);
    hw_model_init(&hw);
    hw.gpu = cl.gpu;
    Workload *w = wl_create(2, &err);
    assert_non_null(w);
    w->par = (WlParallel){.world = 2, .tp = 1, .cp = 1, .pp = 2, .dp = 1, .ep = 1, .vpp = 1, .ga = 1};
    return w;
}

static int32_t add(Workload *w, WlTask t, int32_t dep)
{
    int32_t id = wl_task_add(w, &t, dep >= 0 ? &dep : NULL, dep >= 0 ? 1 : 0, NULL, 0);
    assert_true(id >= 0);
    return id;
}

/* Write w as <dir>/name.*.et and replay it, recording ranks first ..
 * first + count - 1 (count 0: none). */
static TsStatus replay_rec(Workload *w, const char *name, int64_t first, int64_t count, SimChakraResult *r,
                           TsError *err)
{
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s/%s", dir, name);
    WlChakraOptions o;
    wl_chakra_options_init(&o);
    assert_int_equal(wl_write_chakra(w, &o, prefix, NULL, err), TS_OK);
    return sim_replay_chakra(prefix, &hw, &net, first, count, r, err);
}

static TsStatus replay(Workload *w, const char *name, SimChakraResult *r, TsError *err)
{
    return replay_rec(w, name, 0, 0, r, err);
}

/* rank 0 computes 10 us, rank 1 20 us, then both all-reduce 1 MiB over all
 * ranks ("ar") and compute 5 us */
static void collective_graph(Workload *w)
{
    for (int s = 0; s < 2; s++) {
        wl_class_begin(w, s ? "stage1" : "stage0", s);
        int32_t c = add(w, wl_task_comp("a", WL_PHASE_FWD, 0, 0, s ? 20e-6 : 10e-6), -1);
        int32_t ar = add(w, wl_task_coll("ar", WL_PHASE_FWD, TS_COLL_ALLREDUCE, WL_GROUP_WORLD, 1048576), c);
        add(w, wl_task_comp("b", WL_PHASE_FWD, 0, 0, 5e-6), ar);
    }
}

static double parts(const SimChakraResult *r) { return r->compute_s + r->coll_s + r->p2p_s + r->wait_s + r->other_s; }

/* rank 0 computes 10 us, rank 1 20 us, then both all-reduce 1 MiB over all
 * ranks and compute 5 us: the collective starts when rank 1 arrives. */
static void test_collective_waits(void **state)
{
    (void)state;
    Workload *w = two_ranks();
    TsError err = {0};
    collective_graph(w);
    SimChakraResult r;
    assert_int_equal(replay(w, "coll", &r, &err), TS_OK);
    double c = hw_coll_time_s(&net, TS_COLL_ALLREDUCE, 1048576, 2, 1, 1, NULL);
    assert_true(c > 0);
    NEAR(r.iteration_time_s, 25e-6 + c);
    assert_int_equal(r.ranks, 2);
    assert_int_equal(r.collectives, 2);
    assert_int_equal(r.critical_rank, 0); /* both end together: the first */
    NEAR(r.compute_s, 15e-6);
    NEAR(r.wait_s, 10e-6);
    NEAR(r.coll_s, c);
    NEAR(parts(&r), r.iteration_time_s);
    wl_destroy(w);
}

/* the timeline of rank 0 in the collective case: its all-reduce slice runs
 * from its arrival (10 us) to the end (20 us + c) */
static void test_timeline(void **state)
{
    (void)state;
    Workload *w = two_ranks();
    TsError err = {0};
    collective_graph(w);
    SimChakraResult r;
    assert_int_equal(replay_rec(w, "timeline", 0, 1, &r, &err), TS_OK);
    double c = hw_coll_time_s(&net, TS_COLL_ALLREDUCE, 1048576, 2, 1, 1, NULL);
    assert_int_equal(r.recorded_ranks, 1);
    assert_int_equal(r.n_spans, 3);
    assert_string_equal(r.spans[1].name, "ar");
    assert_int_equal(r.spans[1].thread, 3); /* the all-ranks group */
    NEAR(r.spans[0].end_s, 10e-6);
    NEAR(r.spans[1].start_s, 10e-6);
    NEAR(r.spans[1].end_s, 20e-6 + c);
    NEAR(r.spans[2].end_s, 25e-6 + c);
    TsBuf b = {0};
    rep_trace_chakra(&r, "t", &b);
    assert_non_null(strstr(b.data, "\"name\": \"rank 0\""));
    assert_non_null(strstr(b.data, "collectives (all ranks)"));
    ts_buf_free(&b);
    sim_chakra_result_free(&r);
    /* rank 1 alone: its spans, its process, none of rank 0's; a range past
     * the set is clipped */
    assert_int_equal(replay_rec(w, "timeline", 1, 5, &r, &err), TS_OK);
    assert_int_equal(r.recorded_first, 1);
    assert_int_equal(r.recorded_ranks, 1);
    assert_true(r.n_spans > 0);
    for (int64_t i = 0; i < r.n_spans; i++) assert_int_equal(r.spans[i].rank, 1);
    rep_trace_chakra(&r, "t", &b);
    assert_non_null(strstr(b.data, "\"name\": \"rank 1\""));
    assert_null(strstr(b.data, "\"name\": \"rank 0\""));
    ts_buf_free(&b);
    sim_chakra_result_free(&r);
    wl_destroy(w);
}

/* rank 0 computes 10 us and sends 1 MiB; rank 1 receives, computes 10 us:
 * its first 10 us wait for rank 0, then the transfer. */
static void test_handoff(void **state)
{
    (void)state;
    Workload *w = two_ranks();
    TsError err = {0};
    wl_class_begin(w, "stage0", 0);
    int32_t c0 = add(w, wl_task_comp("f0", WL_PHASE_FWD, 0, 0, 10e-6), -1);
    add(w, wl_task_p2p("send", WL_PHASE_FWD, true, 1, 1048576, 7), c0);
    wl_class_begin(w, "stage1", 1);
    int32_t rv = add(w, wl_task_p2p("recv", WL_PHASE_FWD, false, 0, 1048576, 7), -1);
    add(w, wl_task_comp("f1", WL_PHASE_FWD, 0, 0, 10e-6), rv);
    SimChakraResult r;
    assert_int_equal(replay(w, "p2p", &r, &err), TS_OK);
    double x = hw_p2p_time_s(&net, 1048576, false);
    NEAR(r.iteration_time_s, 20e-6 + x);
    assert_int_equal(r.critical_rank, 1);
    assert_int_equal(r.sends, 1);
    NEAR(r.compute_s, 10e-6);
    NEAR(r.p2p_s, x);
    NEAR(r.wait_s, 10e-6);
    NEAR(parts(&r), r.iteration_time_s);
    wl_destroy(w);
}

/* a barrier (our writer's comm_type 9) costs a one-element all-reduce */
static void test_barrier(void **state)
{
    (void)state;
    Workload *w = two_ranks();
    TsError err = {0};
    for (int s = 0; s < 2; s++) {
        wl_class_begin(w, s ? "stage1" : "stage0", s);
        int32_t c = add(w, wl_task_comp("a", WL_PHASE_FWD, 0, 0, s ? 3e-6 : 1e-6), -1);
        add(w, wl_task_coll("barrier", WL_PHASE_FWD, TS_COLL_SENDRECV, WL_GROUP_WORLD, 0), c);
    }
    SimChakraResult r;
    assert_int_equal(replay(w, "barrier", &r, &err), TS_OK);
    NEAR(r.iteration_time_s, 3e-6 + hw_coll_time_s(&net, TS_COLL_ALLREDUCE, 4, 2, 1, 1, NULL));
    wl_destroy(w);
}

/* each rank receives before it sends: every node waits forever */
static void test_deadlock(void **state)
{
    (void)state;
    Workload *w = two_ranks();
    TsError err = {0};
    for (int s = 0; s < 2; s++) {
        wl_class_begin(w, s ? "stage1" : "stage0", s);
        int32_t rv = add(w, wl_task_p2p("recv", WL_PHASE_FWD, false, 1 - s, 4096, 3), -1);
        add(w, wl_task_p2p("send", WL_PHASE_FWD, true, 1 - s, 4096, 3), rv);
    }
    SimChakraResult r;
    assert_int_equal(replay(w, "dead", &r, &err), TS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "deadlock: node 0 'recv', a receive"));
    assert_non_null(strstr(err.msg, "(4 of 4 nodes never run)"));
    wl_destroy(w);
}

/* the replay agrees with sim_replay_dag on a graph both read the same way */
static void test_agrees_with_dag(void **state)
{
    (void)state;
    Workload *w = two_ranks();
    TsError err = {0};
    for (int s = 0; s < 2; s++) {
        wl_class_begin(w, s ? "stage1" : "stage0", s);
        int32_t prev = -1;
        for (int m = 0; m < 4; m++) {
            int32_t in = s ? add(w, wl_task_p2p("recv", WL_PHASE_FWD, false, 0, 1 << 20, m), prev) : prev;
            int32_t c = add(w, wl_task_comp("f", WL_PHASE_FWD, 0, 0, 30e-6), in);
            prev = s ? c : add(w, wl_task_p2p("send", WL_PHASE_FWD, true, 1, 1 << 20, m), c);
        }
    }
    SimChakraResult r;
    SimResult d;
    assert_int_equal(replay(w, "agree", &r, &err), TS_OK);
    assert_int_equal(sim_replay_dag(w, &net, 0, false, &d, &err), TS_OK); /* the Chakra replay has no slow-down */
    NEAR(r.iteration_time_s, d.iteration_time_s);
    NEAR(parts(&r), r.iteration_time_s);
    sim_result_free(&d);
    wl_destroy(w);
}

/* a prefix with no traces */
static void test_missing(void **state)
{
    (void)state;
    Workload *w = two_ranks();
    TsError err = {0};
    SimChakraResult r;
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s/none", dir);
    assert_int_equal(sim_replay_chakra(prefix, &hw, &net, 0, 0, &r, &err), TS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "no trace"));
    wl_destroy(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_collective_waits), cmocka_unit_test(test_timeline),
                                       cmocka_unit_test(test_handoff), cmocka_unit_test(test_barrier),
                                       cmocka_unit_test(test_deadlock), cmocka_unit_test(test_agrees_with_dag),
                                       cmocka_unit_test(test_missing)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
