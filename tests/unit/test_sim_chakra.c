/* Chakra trace sets written by the Chakra writer from hand-built task graphs
 * whose answer is known in closed form, read back into the IR
 * (wl_read_chakra) and replayed by the one replay engine (sim_replay_dag): a
 * collective that waits for its late rank, a pipeline hand-off, a barrier, a
 * receive/send cycle across ranks (deadlock), the timeline of a range of
 * ranks, and the two shapes a set is read in (one class per stage from
 * trainsim's layout, one class per rank without it) agreeing with each
 * other and with the graph they were written from. Times from the hw model
 * (hw_coll_time_s, hw_p2p_time_s) on the dgx-h100 preset; durations are whole
 * microseconds (Chakra's unit); tolerance 1e-12 s. */
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

#include "trainsim/report_trace.h"
#include "trainsim/sim.h"
#include "trainsim/sim_replay.h"
#include "trainsim/workload.h"
#include "trainsim/workload_chakra.h"

#define NEAR(a, b) assert_true(fabs((a) - (b)) <= 1e-12)

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

/* A two-stage workload (ranks 0 and 1) on dgx-h100, net loaded. */
static Workload *two_ranks(void)
{
    ClusterSpec cl;
    TsError err = {0};
    assert_int_equal(hw_cluster_load("dgx-h100", 2, &cl, &err), TS_OK);
    hw_net_init(&net, &cl);
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

/* Write w as <dir>/name.*.et (with trainsim's layout, or without it: a set
 * of foreign origin) and read it back. */
static Workload *round_trip(const Workload *w, const char *name, bool layout)
{
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s/%s", dir, name);
    WlChakraOptions o;
    wl_chakra_options_init(&o);
    o.generator_attr = layout;
    TsError err = {0};
    assert_int_equal(wl_write_chakra(w, &o, prefix, NULL, &err), TS_OK);
    Workload *r = NULL;
    assert_int_equal(wl_read_chakra(prefix, &r, &err), TS_OK);
    return r;
}

static double replay(const Workload *w, SimResult *r)
{
    TsError err = {0};
    assert_int_equal(sim_replay_dag(w, &net, 0, true, r, &err), TS_OK);
    return r->iteration_time_s;
}

static double parts(const SimResult *r)
{
    double s = 0;
    for (int i = 0; i < SIM_BD_COUNT; i++) s += sim_breakdown_get(&r->breakdown, i);
    return s;
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

/* The collective starts when rank 1 arrives, in both shapes; rank 0's wait
 * is charged to the collective (the chain that ended last). */
static void test_collective_waits(void **state)
{
    (void)state;
    Workload *w = two_ranks();
    collective_graph(w);
    double c = hw_coll_time_s(&net, TS_COLL_ALLREDUCE, 1048576, 2, 1, 1, HW_GROUP_NONE);
    assert_true(c > 0);
    for (int layout = 0; layout < 2; layout++) {
        Workload *rd = round_trip(w, layout ? "coll_l" : "coll_r", layout);
        assert_true(layout ? rd->rank_class == NULL : rd->rank_class != NULL);
        assert_int_equal(rd->n_classes, 2);
        SimResult r;
        NEAR(replay(rd, &r), 25e-6 + c);
        NEAR(parts(&r), r.iteration_time_s);
        NEAR(r.breakdown.compute_s, 15e-6);
        sim_result_free(&r);
        wl_destroy(rd);
    }
    wl_destroy(w);
}

/* the per-rank timeline: rank 0's all-reduce runs from rank 1's arrival
 * (20 us) to 20 us + c; the trace of rank 1 alone names rank 1 only */
static void test_timeline(void **state)
{
    (void)state;
    Workload *w = two_ranks();
    collective_graph(w);
    Workload *rd = round_trip(w, "timeline", false);
    double c = hw_coll_time_s(&net, TS_COLL_ALLREDUCE, 1048576, 2, 1, 1, HW_GROUP_NONE);
    SimResult r;
    replay(rd, &r);
    int found = 0;
    for (int64_t i = 0; i < r.n_spans; i++)
        if (r.spans[i].stage == 0 && !strcmp(r.spans[i].name, "ar")) {
            NEAR(r.spans[i].start_s, 20e-6);
            NEAR(r.spans[i].end_s, 20e-6 + c);
            found++;
        }
    assert_int_equal(found, 1);
    TsBuf b = {0};
    rep_trace_ranks(&r, "t", 1, 1, &b);
    assert_non_null(strstr(b.data, "\"name\": \"rank 1\""));
    assert_null(strstr(b.data, "\"name\": \"rank 0\""));
    ts_buf_free(&b);
    sim_result_free(&r);
    wl_destroy(rd);
    wl_destroy(w);
}

/* rank 0 computes 10 us and sends 1 MiB; rank 1 receives, computes 10 us:
 * its first 10 us wait for rank 0, then the transfer. */
static void test_handoff(void **state)
{
    (void)state;
    Workload *w = two_ranks();
    wl_class_begin(w, "stage0", 0);
    int32_t c0 = add(w, wl_task_comp("f0", WL_PHASE_FWD, 0, 0, 10e-6), -1);
    add(w, wl_task_p2p("send", WL_PHASE_FWD, true, 1, 1048576, 7), c0);
    wl_class_begin(w, "stage1", 1);
    int32_t rv = add(w, wl_task_p2p("recv", WL_PHASE_FWD, false, 0, 1048576, 7), -1);
    add(w, wl_task_comp("f1", WL_PHASE_FWD, 0, 0, 10e-6), rv);
    double x = hw_p2p_time_s(&net, 1048576, false);
    for (int layout = 0; layout < 2; layout++) {
        Workload *rd = round_trip(w, layout ? "p2p_l" : "p2p_r", layout);
        SimResult r;
        NEAR(replay(rd, &r), 20e-6 + x);
        assert_int_equal(r.critical_stage, 1);
        NEAR(r.breakdown.pp_comm_exposed_s, x);
        NEAR(r.breakdown.bubble_s, 10e-6);
        NEAR(parts(&r), r.iteration_time_s);
        sim_result_free(&r);
        wl_destroy(rd);
    }
    wl_destroy(w);
}

/* a barrier (our writer's comm_type 9) costs a 4-byte all-reduce */
static void test_barrier(void **state)
{
    (void)state;
    Workload *w = two_ranks();
    for (int s = 0; s < 2; s++) {
        wl_class_begin(w, s ? "stage1" : "stage0", s);
        int32_t c = add(w, wl_task_comp("a", WL_PHASE_FWD, 0, 0, s ? 3e-6 : 1e-6), -1);
        add(w, wl_task_coll("barrier", WL_PHASE_FWD, TS_COLL_SENDRECV, WL_GROUP_WORLD, 0), c);
    }
    Workload *rd = round_trip(w, "barrier", false);
    SimResult r;
    NEAR(replay(rd, &r), 3e-6 + hw_coll_time_s(&net, TS_COLL_ALLREDUCE, 4, 2, 1, 1, HW_GROUP_NONE));
    sim_result_free(&r);
    wl_destroy(rd);
    wl_destroy(w);
}

/* an all-gather's comm_size is each rank's input (ASTRA-sim and Chakra's
 * PyTorch converter read it so): the writer divides the IR's whole buffer
 * by the group size, the reader multiplies it back */
static void test_allgather_size(void **state)
{
    (void)state;
    Workload *w = two_ranks();
    for (int s = 0; s < 2; s++) {
        wl_class_begin(w, s ? "stage1" : "stage0", s);
        add(w, wl_task_coll("ag", WL_PHASE_FWD, TS_COLL_ALLGATHER, WL_GROUP_WORLD, 2.0 * 1048576), -1);
    }
    TsBuf b = {0};
    TsError err = {0};
    assert_int_equal(wl_chakra_encode_rank(w, NULL, 0, &b, &err), TS_OK);
    WlChakraTrace t;
    assert_int_equal(wl_chakra_decode("t", (const uint8_t *)b.data, b.len, &t, &err), TS_OK);
    assert_int_equal(t.n_nodes, 1);
    assert_int_equal(t.nodes[0].comm_size, 1048576);
    assert_string_equal(t.nodes[0].pg_name, "1"); /* the all-ranks group, ids from 1 */
    wl_chakra_trace_free(&t);
    ts_buf_free(&b);
    Workload *rd = round_trip(w, "ag", true);
    assert_true(rd->tasks[0].comm_bytes == 2.0 * 1048576);
    wl_destroy(rd);
    wl_destroy(w);
}

/* each rank receives before it sends: every task waits forever */
static void test_deadlock(void **state)
{
    (void)state;
    Workload *w = two_ranks();
    for (int s = 0; s < 2; s++) {
        wl_class_begin(w, s ? "stage1" : "stage0", s);
        int32_t rv = add(w, wl_task_p2p("recv", WL_PHASE_FWD, false, 1 - s, 4096, 3), -1);
        add(w, wl_task_p2p("send", WL_PHASE_FWD, true, 1 - s, 4096, 3), rv);
    }
    Workload *rd = round_trip(w, "dead", false);
    SimResult r;
    TsError err = {0};
    assert_int_equal(sim_replay_dag(rd, &net, 0, false, &r, &err), TS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "deadlocks: task 0 (recv \"recv\") of class rank0"));
    wl_destroy(rd);
    wl_destroy(w);
}

/* a pipeline of four micro-batches: the graph, its set read per stage and
 * its set read per rank replay alike (durations are whole µs) */
static void test_shapes_agree(void **state)
{
    (void)state;
    Workload *w = two_ranks();
    for (int s = 0; s < 2; s++) {
        wl_class_begin(w, s ? "stage1" : "stage0", s);
        int32_t prev = -1;
        for (int m = 0; m < 4; m++) {
            int32_t in = s ? add(w, wl_task_p2p("recv", WL_PHASE_FWD, false, 0, 1 << 20, m), prev) : prev;
            int32_t c = add(w, wl_task_comp("f", WL_PHASE_FWD, 0, 0, 30e-6), in);
            prev = s ? c : add(w, wl_task_p2p("send", WL_PHASE_FWD, true, 1, 1 << 20, m), c);
        }
    }
    SimResult a, b, c;
    double t = replay(w, &a);
    Workload *ls = round_trip(w, "agree_l", true), *rs = round_trip(w, "agree_r", false);
    NEAR(replay(ls, &b), t);
    NEAR(replay(rs, &c), t);
    NEAR(parts(&b), t);
    NEAR(parts(&c), t);
    sim_result_free(&a);
    sim_result_free(&b);
    sim_result_free(&c);
    wl_destroy(ls);
    wl_destroy(rs);
    wl_destroy(w);
}

/* a prefix with no traces */
static void test_missing(void **state)
{
    (void)state;
    TsError err = {0};
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s/none", dir);
    Workload *w = NULL;
    assert_int_equal(wl_read_chakra(prefix, &w, &err), TS_ERR_INPUT);
    assert_null(w);
    assert_non_null(strstr(err.msg, "no trace"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_collective_waits), cmocka_unit_test(test_timeline),
                                       cmocka_unit_test(test_handoff),          cmocka_unit_test(test_barrier),
                                       cmocka_unit_test(test_allgather_size),   cmocka_unit_test(test_deadlock),
                                       cmocka_unit_test(test_shapes_agree),     cmocka_unit_test(test_missing)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
