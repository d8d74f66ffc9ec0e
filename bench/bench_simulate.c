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
#include "trainsim/partition.h"
#include "trainsim/sim.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct Case {
    int64_t stage_layers[64]; /* uneven split when pp does not divide the layers */
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
    if (c->m.layers % pp && vpp == 1 && pp <= 64) {
        /* Llama 3 405B style: first and last stage one layer lighter */
        int64_t base = (c->m.layers + pp - 1) / pp, excess = base * pp - c->m.layers;
        for (int64_t s = 0; s < pp; s++) c->stage_layers[s] = base;
        for (int64_t k = 0; k < excess; k++) c->stage_layers[k % 2 ? 0 : pp - 1 - k / 2] -= 1;
        c->p.stage_layers = c->stage_layers;
        c->p.n_stage_layers = (int32_t)pp;
    }
    return 0;
}

/* Seconds per sim_simulate: the best mean over batches of 50 calls during
 * ~0.3 s (the minimum filters other processes on a shared machine). */
static double per_plan(Case *c, SimWork *w, double *iter_s)
{
    TsError err = {0};
    SimSetup in = {.model = &c->m, .hw = &c->hw, .net = &c->net};
    sim_options_init(&in.opt);
    SimResult r;
    double best = 1e9, start = now();
    do {
        double t0 = now();
        for (int k = 0; k < 50; k++) {
            in.plan = c->p;
            if (sim_simulate(&in, w, &r, &err) != TS_OK) {
                fprintf(stderr, "bench_simulate: %s\n", err.msg);
                return -1;
            }
        }
        double t = (now() - t0) / 50;
        if (t < best) best = t;
    } while (now() - start < 0.3);
    *iter_s = r.iteration_time_s;
    return best;
}

/* The parts: plan_resolve, part_memory, the schedule engine alone (uniform
 * costs of the same shape), best of batches as above. */
static void parts(Case *c, SimWork *w)
{
    TsError err = {0};
    double best[3] = {1e9, 1e9, 1e9}, start = now();
    ParallelPlan p;
    PartMemOptions mo;
    part_mem_options_init(&mo);
    PartMemory pk;
    static SimChunkCost cc[1024];
    static SimStageCost sc[256];
    for (int i = 0; i < 1024; i++) cc[i] = (SimChunkCost){.fwd_s = 1, .bwd_s = 2, .p2p_fwd_s = 0.01,
                                                          .p2p_bwd_s = 0.01, .dp_grad_s = 1,
                                                          .dp_end_s = sim_dp_end_uniform(8, 1, 2)};
    p = c->p;
    plan_resolve(&c->m, &p, &err);
    SimPipeline pl = {.stages = (int32_t)p.pp, .chunks = (int32_t)p.vpp, .micro_batches = p.grad_accum,
                      .schedule = p.vpp > 1 ? PLAN_SCHED_INTERLEAVED : PLAN_SCHED_1F1B, .chunk = cc, .stage = sc,
                      .dp_overlap = true};
    SimResult r;
    do {
        double t0 = now();
        for (int k = 0; k < 50; k++) {
            p = c->p;
            plan_resolve(&c->m, &p, &err);
        }
        double t1 = now();
        for (int k = 0; k < 50; k++) part_memory(&c->m, &p, &mo, NULL, &pk, &err);
        double t2 = now();
        for (int k = 0; k < 50; k++) sim_pipeline_run(&pl, w, &r, &err);
        double t3 = now();
        double d[3] = {t1 - t0, t2 - t1, t3 - t2};
        for (int i = 0; i < 3; i++)
            if (d[i] / 50 < best[i]) best[i] = d[i] / 50;
    } while (now() - start < 0.3);
    printf("      parts: plan_resolve %.2f us, part_memory %.2f us, schedule engine %.2f us (%lld tasks); "
           "the rest is costing\n",
           best[0] * 1e6, best[1] * 1e6, best[2] * 1e6, (long long)(2 * p.pp * p.vpp * p.grad_accum));
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
    parts(&c, w);
    if (setup(&c, "llama3-405b", "dgx-h100", 16384, 8, 16, 1, 2048)) return 1;
    t = per_plan(&c, w, &it);
    printf("  llama3-405b 16384 x H100 TP8 PP16 DP128 GB2048 (16 mb)   %7.2f us/plan   (iteration %.2f s)\n", t * 1e6, it);
    parts(&c, w);

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
    printf("\n  uneven stages (llama3-70b, 80 layers, H100, TP8 DP8; first and last stages one layer lighter):\n");
    for (int64_t pp = 6; pp <= 15; pp += 9)
        for (int64_t mb = 16; mb <= 256; mb *= 4) {
            if (setup(&c, "llama3-70b", "dgx-h100", 64 * pp, 8, pp, 1, mb * 8)) return 1;
            t = per_plan(&c, w, &it);
            printf("    PP %2lld  %4lld mb  1F1B %8.2f us/plan\n", (long long)pp, (long long)mb, t * 1e6);
        }
    sim_work_destroy(w);
    return 0;
}
