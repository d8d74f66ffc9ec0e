/* sim_replay_dag on hand-built task graphs whose answer is known in closed
 * form: a pipeline hand-off, a blocking TP all-reduce, an asynchronous DP
 * reduction at the tail, and a cross-stage deadlock. Times from the hw model
 * (hw_p2p_time_s, hw_coll_time_s) on the dgx-h100 preset; tolerance 1e-12 s. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "trainsim/sim.h"
#include "trainsim/sim_replay.h"
#include "trainsim/workload.h"

#define NEAR(a, b) assert_true(fabs((a) - (b)) <= 1e-12)

static HwNet net;

static void load_net(int64_t gpus)
{
    ClusterSpec cl;
    TsError err = {0};
    assert_int_equal(hw_cluster_load("dgx-h100", gpus, &cl, &err), TS_OK);
    hw_net_init(&net, &cl);
}

/* An empty workload of world = tp*pp*dp ranks on dgx-h100 (net loaded). */
static Workload *new_wl(int64_t tp, int64_t pp, int64_t dp)
{
    int64_t world = tp * pp * dp;
    load_net(world);
    TsError err = {0};
    Workload *w = wl_create(world, &err);
    assert_non_null(w);
    w->par = (WlParallel){.world = world, .tp = tp, .cp = 1, .pp = pp, .dp = dp, .ep = 1, .vpp = 1, .ga = 1};
    return w;
}

static int32_t add(Workload *w, WlTask t, int32_t dep)
{
    int32_t id = wl_task_add(w, &t, dep >= 0 ? &dep : NULL, dep >= 0 ? 1 : 0, NULL, 0);
    assert_true(id >= 0);
    return id;
}

static double sum(const SimBreakdown *b)
{
    double s = 0;
    for (int i = 0; i < SIM_BD_COUNT; i++) s += sim_breakdown_get(b, i);
    return s;
}

/* stage 0: compute 1 ms, send 1 MiB; stage 1: receive, compute 1 ms. Stage 1
 * ends at 2 ms + x; its idle millisecond is bubble, the transfer pp. */
static void test_handoff(void **state)
{
    (void)state;
    Workload *w = new_wl(1, 2, 1);
    TsError err = {0};
    wl_class_begin(w, "stage0", 0);
    int32_t c0 = add(w, wl_task_comp("L0.f", WL_PHASE_FWD, 0, 0, 1e-3), -1);
    add(w, wl_task_p2p("send", WL_PHASE_FWD, true, 1, 1048576, 7), c0);
    wl_class_begin(w, "stage1", 1);
    int32_t r = add(w, wl_task_p2p("recv", WL_PHASE_FWD, false, 0, 1048576, 7), -1);
    add(w, wl_task_comp("L1.f", WL_PHASE_FWD, 0, 0, 1e-3), r);
    SimResult res;
    assert_int_equal(sim_replay_dag(w, &net, 0, false, &res, &err), TS_OK);
    double x = hw_p2p_time_s(&net, 1048576, false);
    assert_true(x > 0);
    NEAR(res.iteration_time_s, 2e-3 + x);
    assert_int_equal(res.critical_stage, 1);
    NEAR(res.breakdown.compute_s, 1e-3);
    NEAR(res.breakdown.pp_comm_exposed_s, x);
    NEAR(res.breakdown.bubble_s, 1e-3);
    NEAR(sum(&res.breakdown), res.iteration_time_s);
    wl_destroy(w);
}

/* One TP-8 rank class: compute, blocking all-reduce, compute, then an
 * asynchronous DP all-reduce hanging off the last compute; the stream ends
 * with it: TP exposed = the all-reduce, DP exposed = the tail. */
static void test_collectives(void **state)
{
    (void)state;
    Workload *w = new_wl(8, 1, 2);
    TsError err = {0};
    wl_class_begin(w, "stage0", 0);
    int32_t a = add(w, wl_task_comp("f", WL_PHASE_FWD, 0, 0, 1e-3), -1);
    int32_t ar = add(w, wl_task_coll("tp.ar", WL_PHASE_FWD, TS_COLL_ALLREDUCE, WL_GROUP_TP, 64.0 * 1048576), a);
    int32_t b = add(w, wl_task_comp("b", WL_PHASE_IG, 0, 0, 2e-3), ar);
    WlTask g = wl_task_coll("grad.ar", WL_PHASE_WG, TS_COLL_ALLREDUCE, WL_GROUP_DP, 256.0 * 1048576);
    g.flags |= WL_F_ASYNC;
    add(w, g, b);
    SimResult res;
    assert_int_equal(sim_replay_dag(w, &net, 0, false, &res, &err), TS_OK);
    double t_tp = hw_coll_time_s(&net, TS_COLL_ALLREDUCE, 64.0 * 1048576, 8, 1, 1, HW_GROUP_TP);
    /* the DP pair: rank 0 and rank 8, on two nodes */
    double t_dp = hw_coll_time_s(&net, TS_COLL_ALLREDUCE, 256.0 * 1048576, 2, 2, 1, HW_GROUP_DP);
    NEAR(res.iteration_time_s, 3e-3 + t_tp + t_dp);
    NEAR(res.breakdown.tp_comm_exposed_s, t_tp);
    NEAR(res.breakdown.dp_comm_exposed_s, t_dp);
    NEAR(res.breakdown.compute_s, 3e-3);
    NEAR(sum(&res.breakdown), res.iteration_time_s);
    wl_destroy(w);
}

/* The overlap slow-down: an asynchronous DP all-reduce of duration d starts
 * with a 1 ms compute followed by a 3 ms one; it overlaps min(d, 4 ms) of
 * compute, and the iteration grows by 0.1 times that. */
static void test_overlap_slowdown(void **state)
{
    (void)state;
    Workload *w = new_wl(1, 1, 2);
    TsError err = {0};
    wl_class_begin(w, "stage0", 0);
    int32_t a = add(w, wl_task_comp("a", WL_PHASE_FWD, 0, 0, 1e-3), -1);
    WlTask g = wl_task_coll("grad.ar", WL_PHASE_WG, TS_COLL_ALLREDUCE, WL_GROUP_DP, 64.0 * 1048576);
    g.flags |= WL_F_ASYNC;
    int32_t c = wl_task_add(w, &g, NULL, 0, NULL, 0); /* from the start, beside both computes */
    assert_true(c >= 0);
    add(w, wl_task_comp("b", WL_PHASE_IG, 0, 0, 3e-3), a);
    double d = hw_coll_time_s(&net, TS_COLL_ALLREDUCE, 64.0 * 1048576, 2, 1, 1, HW_GROUP_DP); /* one node */
    assert_true(d > 0 && d < 4e-3);
    SimResult res;
    assert_int_equal(sim_replay_dag(w, &net, 0.1, false, &res, &err), TS_OK);
    NEAR(res.breakdown.overlap_slowdown_s, 0.1 * d);
    NEAR(res.iteration_time_s, 4e-3 + 0.1 * d);
    NEAR(sum(&res.breakdown), res.iteration_time_s);
    assert_int_equal(sim_replay_dag(w, &net, 0, false, &res, &err), TS_OK);
    NEAR(res.iteration_time_s, 4e-3);
    wl_destroy(w);
}

/* Each stage first waits for the other's send: no task can run. */
static void test_deadlock(void **state)
{
    (void)state;
    Workload *w = new_wl(1, 2, 1);
    TsError err = {0};
    wl_class_begin(w, "stage0", 0);
    int32_t r0 = add(w, wl_task_p2p("recv", WL_PHASE_IG, false, 1, 1024, 1), -1);
    add(w, wl_task_p2p("send", WL_PHASE_FWD, true, 1, 1024, 2), r0);
    wl_class_begin(w, "stage1", 1);
    int32_t r1 = add(w, wl_task_p2p("recv", WL_PHASE_FWD, false, 0, 1024, 2), -1);
    add(w, wl_task_p2p("send", WL_PHASE_IG, true, 0, 1024, 1), r1);
    SimResult res;
    assert_int_equal(sim_replay_dag(w, &net, 0, false, &res, &err), TS_ERR_INPUT);
    assert_non_null(strstr(err.msg, "deadlocks"));
    /* an empty workload is an input error too */
    Workload *e = wl_create(1, &err);
    assert_int_equal(sim_replay_dag(e, &net, 0, false, &res, &err), TS_ERR_INPUT);
    wl_destroy(e);
    wl_destroy(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handoff),
        cmocka_unit_test(test_collectives), cmocka_unit_test(test_overlap_slowdown),
        cmocka_unit_test(test_deadlock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
