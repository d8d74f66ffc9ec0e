/*
 * bench_sweep — plan-search speed. For llama3-70b on 1024 H100s (dgx-h100,
 * seq 8192, global batch 1024) and deepseek-v3 on 2048 H800s (hgx-h800,
 * seq 4096, global batch 4096), the whole default plan space is searched
 * with 1 thread and with every core, twice: with branch and bound (the
 * default: plans simulated in the order of their lower bound until it is
 * worse than the k-th best, search.h) and exhaustively (every plan that fits
 * simulated); printed per case and mode:
 *   candidates / valid / pruned / bounded / simulated counts,
 *   valid plans per second (checked or simulated) and simulated plans per
 *   second, per thread count, and the speed-up;
 *   the time to the best plan (= the whole search: the ranking is exact);
 *   the process CPU time and the CPU efficiency (CPU of 1 thread / CPU of
 *   N threads: 1.00 = threads add no work), best of REPEATS runs each;
 *   the cost of the memory-only check alone (plans/s).
 * MPI scaling: run `mpirun -np N trainsim sweep ... -j 1` (see docs/sweep.md).
 *   usage: bench_sweep [max_threads]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "trainsim/search.h"

#define REPEATS 5

/* CPU seconds of the whole process (every thread). */
static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct Case {
    const char *model, *cluster;
    int64_t gpus, seq, global_batch;
} Case;

static SearchEvalStatus check_only_sim(void *ctx, void *scratch, SearchPoint *p)
{
    (void)ctx;
    (void)scratch;
    (void)p;
    return SEARCH_EVAL_OK;
}

static int run_case(const Case *cs, int max_threads)
{
    TsError err = {0};
    ModelSpec m;
    ClusterSpec cl;
    if (model_load(cs->model, NULL, &m, &err) != TS_OK || hw_cluster_load(cs->cluster, cs->gpus, &cl, &err) != TS_OK) {
        fprintf(stderr, "bench_sweep: %s\n", err.msg);
        return 1;
    }
    HwModel hw;
    hw_model_init(&hw);
    hw.gpu = cl.gpu;
    HwNet net;
    hw_net_init(&net, &cl);
    SearchEvalCtx x;
    search_eval_init(&x, &m, &hw, cs->global_batch, cs->seq);
    search_eval_add_net(&x, cs->gpus, &net);
    SearchEvaluator ev = search_eval_sim(&x);
    SearchConfig c;
    search_config_init(&c);
    c.gpus.n = 1;
    c.gpus.v[0] = cs->gpus;
    c.global_batch = cs->global_batch;
    c.seq = cs->seq;
    c.layers = m.layers;
    c.experts = m.experts;
    printf("== %s on %lld x %s (%s), seq %lld, global batch %lld\n", cs->model, (long long)cs->gpus, cl.gpu.name,
           cs->cluster, (long long)cs->seq, (long long)cs->global_batch);
    for (int mode = 0; mode < 2; mode++) {
    SearchEvaluator em = ev;
    if (mode == 1) em.bound = NULL;
    printf("  %s\n", mode == 0 ? "branch and bound (default)" : "exhaustive (every plan that fits simulated)");
    double base = 0, base_cpu = 0;
    for (int t = 1; t <= max_threads; t *= 2) {
        c.threads = t;
        SearchResult r;
        double dt = 1e9, cpu = 1e9; /* best of REPEATS: the machine is shared */
        for (int rep = 0; rep < REPEATS; rep++) {
            double c0 = cpu_s(), t0 = now_s();
            if (search_run(&c, &em, &r, &err) != TS_OK) {
                fprintf(stderr, "bench_sweep: %s\n", err.msg);
                return 1;
            }
            double d = now_s() - t0, dc = cpu_s() - c0;
            if (d < dt) dt = d;
            if (dc < cpu) cpu = dc;
            if (rep < REPEATS - 1) search_result_free(&r);
        }
        if (t == 1) {
            base = dt;
            base_cpu = cpu;
            printf("   %lld candidates, %lld valid, %lld pruned by memory, %lld bounded, %lld simulated\n",
                   (long long)r.stats.candidates, (long long)r.stats.enumerated, (long long)r.stats.pruned,
                   (long long)r.stats.bounded, (long long)r.stats.simulated);
            char rc[24]; /* full:N, the fewest layers a chunk recomputes (SearchKnobs.rc_layers) */
            if (r.n_top && r.top[0].k.rc_layers > 0) snprintf(rc, sizeof rc, "full:%d", r.top[0].k.rc_layers);
            else if (r.n_top) snprintf(rc, sizeof rc, "%s", plan_recompute_name((PlanRecompute)r.top[0].k.recompute));
            if (r.n_top)
                printf("   best: tp %d pp %d vpp %d cp %d ep %d dp %d mbs %d %s zero %d %s: %.0f tokens/s, %.1f%% MFU\n",
                       r.top[0].k.tp, r.top[0].k.pp, r.top[0].k.vpp, r.top[0].k.cp, r.top[0].k.ep, r.top[0].k.dp,
                       r.top[0].k.mbs, rc, r.top[0].k.zero,
                       plan_sched_name((PlanSchedule)r.top[0].k.schedule), r.top[0].tokens_per_s,
                       100 * r.top[0].mfu);
        }
        /* CPU efficiency: CPU seconds of 1 thread / CPU seconds of t threads;
         * 1.00 means no work was added by threading (no contention, no false
         * sharing); wall speed-up below t with efficiency ~1 means the cores
         * were not free (other processes). */
        printf("   %2d thread%s: %.3f s to the best plan, %9.0f valid plans/s (%8.0f per thread), "
               "%8.0f simulated/s (%7.0f per thread), speed-up %.2f, CPU %.3f s, CPU efficiency %.2f, "
               "%.0f simulated per CPU-second\n",
               t, t == 1 ? " " : "s", dt, (double)r.stats.enumerated / dt, (double)r.stats.enumerated / dt / t,
               (double)r.stats.simulated / dt, (double)r.stats.simulated / dt / t, base / dt, cpu, base_cpu / cpu,
               (double)r.stats.simulated / cpu);
        search_result_free(&r);
        if (t < max_threads && 2 * t > max_threads) t = max_threads / 2; /* end on max_threads */
    }
    }
    /* the pruning path alone: check every plan, simulate none */
    SearchEvaluator only = ev;
    only.simulate = check_only_sim;
    only.bound = NULL;
    c.threads = 1;
    SearchResult r;
    double t0 = now_s();
    search_run(&c, &only, &r, &err);
    double dt = now_s() - t0;
    printf("   memory check alone (plan_resolve + part_memory), 1 thread: %.0f plans/s\n",
           (double)r.stats.candidates / dt);
    search_result_free(&r);
    return 0;
}

int main(int argc, char **argv)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int max_threads = argc > 1 ? atoi(argv[1]) : (int)(cores > 0 ? cores : 1);
    if (max_threads < 1) max_threads = 1;
    static const Case CASES[] = {
        {"llama3-70b", "dgx-h100", 1024, 8192, 1024},
        {"deepseek-v3", "hgx-h800", 2048, 4096, 4096},
    };
    int rc = 0;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) rc |= run_case(&CASES[i], max_threads);
    return rc;
}
