/* bench_simulate — how long one plan takes to simulate (plan validation,
 * costing, partition memory, schedule), single core.
 *
 *   gpt3-175b on 1024 A100s (TP 8, PP 8, DP 16, global batch 1536)
 *   llama3-405b on 16384 H100s (TP 8, PP 16, DP 128, global batch 2048)
 *   scaling: 1k..128k GPUs at fixed micro-batches per replica; 8..2048
 *   micro-batches at fixed GPUs; schedule engine alone.
 * Prints figures; asserts nothing (STYLE.md 16). */
#include <stdio.h>
#include <time.h>

#include "trainsim/hw.h"
#include "trainsim/sim.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct Case {
    ModelSpec m;
    ClusterSpec cl;
    HwModel hw;
    HwNet net;
    ParallelPlan p;
} Case;

static int setup(Case *c, const char *model, const char *cluster, int64_t gpus, int64_t tp, int64_t pp,
                 int64_t vpp, int64_t gb)
{
    TsError err = {0};
    if (model_preset(model, &c->m, &err) != TS_OK || hw_cluster_load(cluster, gpus, &c->cl, &err) != TS_OK) {
        fprintf(stderr, "bench_simulate: %s\n", err.msg);
        return 1;
    }
    hw_model_init(&c->hw);
    c->hw.gpu = c->cl.gpu;
    hw_net_init(&c->net, &c->cl);
    plan_init(&c->p);
    c->p.tp = tp;
    c->p.pp = pp;
    c->p.vpp = vpp;
    c->p.gpus = gpus;
    c->p.global_batch = gb;
    c->p.seq = c->m.max_positions < 8192 ? c->m.max_positions : 8192;
    c->p.dist_opt = true;
    if (vpp > 1) c->p.schedule = PLAN_SCHED_INTERLEAVED;
    return 0;
}

/* Mean seconds per sim_simulate over enough repetitions for ~0.2 s. */
static double per_plan(Case *c, SimWork *w, double *iter_s)
{
    TsError err = {0};
    SimSetup in = {.model = &c->m, .hw = &c->hw, .net = &c->net};
    sim_options_init(&in.opt);
    SimResult r;
    long n = 0;
    double t0 = now(), t;
    do {
        for (int k = 0; k < 50; k++, n++) {
            in.plan = c->p;
            if (sim_simulate(&in, w, &r, &err) != TS_OK) {
                fprintf(stderr, "bench_simulate: %s\n", err.msg);
                return -1;
            }
        }
        t = now() - t0;
    } while (t < 0.2);
    *iter_s = r.iteration_time_s;
    return t / (double)n;
}

int main(void)
{
    SimWork *w = sim_work_create();
    Case c;
    double it;
    printf("bench_simulate: time per plan (plan_resolve + costing + part_memory + schedule), one core\n\n");
    if (setup(&c, "gpt3-175b", "dgx-a100", 1024, 8, 8, 1, 1536)) return 1;
    double t = per_plan(&c, w, &it);
    printf("  gpt3-175b   1024 x A100  TP8 PP8 DP16  GB1536 (96 mb)   %7.2f us/plan   (iteration %.2f s)\n", t * 1e6, it);
    if (setup(&c, "llama3-405b", "dgx-h100", 16384, 8, 16, 1, 2048)) return 1;
    t = per_plan(&c, w, &it);
    printf("  llama3-405b 16384 x H100 TP8 PP16 DP128 GB2048 (16 mb)  %7.2f us/plan   (iteration %.2f s)\n", t * 1e6, it);

    printf("\n  GPUs (gpt3-175b TP8 PP8, 96 micro-batches per replica):\n");
    for (int64_t g = 1024; g <= 131072; g *= 2) {
        if (setup(&c, "gpt3-175b", "dgx-a100", g, 8, 8, 1, 96 * g / 64)) return 1;
        t = per_plan(&c, w, &it);
        printf("    %7lld GPUs  DP %5lld  %7.2f us/plan\n", (long long)g, (long long)(g / 64), t * 1e6);
    }
    printf("\n  micro-batches (gpt3-175b 1024 x A100, TP8 PP8 DP16):\n");
    for (int64_t mb = 8; mb <= 2048; mb *= 2) {
        if (setup(&c, "gpt3-175b", "dgx-a100", 1024, 8, 8, 1, mb * 16)) return 1;
        t = per_plan(&c, w, &it);
        double t1 = t;
        if (setup(&c, "gpt3-175b", "dgx-a100", 1024, 8, 8, 3, mb * 16)) return 1;
        double t3 = per_plan(&c, w, &it);
        printf("    %5lld mb  1F1B %8.2f us/plan   interleaved v=3 %8.2f us/plan\n", (long long)mb, t1 * 1e6,
               t3 * 1e6);
    }
    sim_work_destroy(w);
    return 0;
}
