/* bench_plan — time to validate a plan, compute its memory, and build the
 * full partition, for gpt3-175b on 1024 GPUs and deepseek-v3 on 2048 GPUs
 * (graph built once). Target: validate + memory < 5 us per plan. Prints
 * ns per plan for each path (thread CPU time); tests never assert on these. */
#include "trainsim/partition.h"

#include <stdio.h>
#include <time.h>

/* Thread CPU time (user + system, page faults included): the dev box is
 * shared, and wall time there mostly measures the other jobs. */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void bench(const char *model, ParallelPlan base, const int64_t *tps, int ntp,
                  const int64_t *pps, int npp)
{
    ModelSpec m;
    TsError err = {0};
    if (model_preset(model, &m, &err) != TS_OK) { printf("%s: %s\n", model, err.msg); return; }
    GraphOptions go;
    graph_options_init(&go);
    go.seq = base.seq; go.batch = 1; go.tp = base.tp;
    ModuleGraph *g = NULL;
    double t0 = now_s();
    if (graph_build(&m, &go, &g, &err) != TS_OK) { printf("%s: %s\n", model, err.msg); return; }
    double t_graph = now_s() - t0;
    PartMemOptions mo;
    part_mem_options_init(&mo);
    /* validate + memory over a grid of plans, repeated */
    long n = 0, valid = 0;
    double sink = 0;
    t0 = now_s();
    for (int rep = 0; rep < 2000; rep++)
        for (int i = 0; i < ntp; i++)
            for (int j = 0; j < npp; j++) {
                ParallelPlan p = base;
                p.tp = tps[i]; p.pp = pps[j]; p.dp = 0;
                if (p.vpp > 1 && m.layers % (p.pp * p.vpp)) p.vpp = 1;
                p.schedule = p.vpp > 1 ? PLAN_SCHED_INTERLEAVED : PLAN_SCHED_1F1B;
                PartMemory peak;
                n++;
                if (plan_resolve(&m, &p, &err) != TS_OK) continue;
                if (part_memory(&m, &p, &mo, NULL, &peak, &err) != TS_OK) continue;
                valid++;
                sink += peak.total_bytes;
            }
    double t_mem = (now_s() - t0) / (double)n;
    /* full partition of the base plan: best of 20 batches of 100 */
    double t_build = 1e9;
    for (int bt = 0; bt < 20; bt++) {
        int reps = 100;
        t0 = now_s();
        for (int r = 0; r < reps; r++) {
            Partition *pt = NULL;
            if (part_build(g, &base, &mo, &pt, &err) != TS_OK) { printf("build: %s\n", err.msg); break; }
            sink += pt->peak.total_bytes;
            part_destroy(pt);
        }
        double tb = (now_s() - t0) / reps;
        if (tb < t_build) t_build = tb;
    }
    printf("%-12s gpus %5lld  graph build %.2f ms (%d ops)\n", model, (long long)base.gpus,
           t_graph * 1e3, g->n_ops);
    printf("  validate + memory (peak only): %7.0f ns/plan over %ld plans (%ld valid)\n",
           t_mem * 1e9, n, valid);
    printf("  part_build (templates, collectives, memory of all stages): %7.0f ns (best batch mean)\n",
           t_build * 1e9);
    if (sink < 0) printf("%g\n", sink);
    graph_destroy(g);
}

int main(void)
{
    static const int64_t tps[] = {1, 2, 4, 8};
    static const int64_t pps[] = {1, 2, 4, 8, 16};
    ParallelPlan p;
    plan_init(&p);
    p.gpus = 1024; p.tp = 8; p.pp = 8; p.vpp = 3; p.seq = 2048; p.global_batch = 1536;
    p.schedule = PLAN_SCHED_INTERLEAVED; p.recompute = PLAN_RECOMPUTE_SELECTIVE;
    bench("gpt3-175b", p, tps, 4, pps, 5);
    static const int64_t pps2[] = {16};
    plan_init(&p);
    static const int64_t dsv3_stage[16] = {4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 1};
    p.gpus = 2048; p.tp = 2; p.pp = 16; p.ep = 64; p.etp = 1; p.seq = 4096; p.global_batch = 15360;
    p.stage_layers = dsv3_stage; p.n_stage_layers = 16;
    bench("deepseek-v3", p, tps, 4, pps2, 1);
    return 0;
}
