/* bench_workload — time and size of the workload writers:
 *   1. the seed's SimAI workload (aicb-llama-405b, tp8 pp16 1024 GPUs, AICB 1.1
 *      layout): build + format, target < 5 ms;
 *   2. Chakra traces of gpt3-175b on 1024 GPUs (tp8 pp8 dp16, gbs 1536);
 *   3. Chakra traces of llama3-405b on 16384 GPUs (tp8 pp16 dp128, gbs 1024,
 *      seq 8192, uneven stages): target > 200 MB/s of output;
 * plus the IR's memory, which grows with rank classes (stages), not GPUs.
 * Traces go to a fresh directory under /tmp that is deleted afterwards. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "trainsim/hw.h"
#include "trainsim/model.h"
#include "trainsim/plan.h"
#include "trainsim/sim.h"
#include "trainsim/sim_replay.h"
#include "trainsim/workload.h"
#include "trainsim/workload_build.h"
#include "trainsim/workload_chakra.h"
#include "trainsim/workload_io.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static HwModel g_hw;

/* The costed step of a preset on a plan (dist-opt, bf16), at the H100's
 * kernel times, in st (static storage: one step at a time). */
static int step_of(const char *model, int64_t tp, int64_t pp, int64_t gpus, int64_t gbs, int64_t seq, bool rec,
                   WlStep *st)
{
    static ModelSpec m;
    static ParallelPlan p;
    static WlStepStore store;
    TsError err = {0};
    if (model_preset(model, &m, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    plan_init(&p);
    p.tp = tp;
    p.pp = pp;
    p.gpus = gpus;
    p.global_batch = gbs;
    p.seq = seq;
    p.dist_opt = true;
    static const int64_t uneven[16] = {8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7, 7}; /* 126 layers */
    if (m.layers % pp) {
        p.stage_layers = uneven;
        p.n_stage_layers = 16;
    }
    if (rec) p.recompute = PLAN_RECOMPUTE_SELECTIVE;
    if (plan_resolve(&m, &p, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    CostCtx cc = {.hw = &g_hw, .dtype = p.dtype, .act_dtype = p.dtype, .tensor_factor = 1.0};
    wl_step_make(&m, &p, NULL, &cc, &store, st);
    return 0;
}

static long rss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* wl_read_chakra + sim_replay_dag on the set just written (simulate
 * --workload PREFIX): reading (every rank decoded and checked) and replaying
 * timed apart. */
static void replay_set(const char *label, const char *prefix, int64_t gpus, double bytes)
{
    ClusterSpec cl;
    TsError e = {0};
    if (hw_cluster_load("dgx-h100", gpus, &cl, &e) != TS_OK) return;
    HwNet net;
    hw_net_init(&net, &cl);
    Workload *w = NULL;
    double t0 = now_s();
    TsStatus st = wl_read_chakra(prefix, &w, &e);
    double t1 = now_s();
    SimResult r = {0};
    if (!st) st = sim_replay_dag(w, &net, 0.1, false, &r, &e);
    double t2 = now_s();
    if (st != TS_OK) {
        fprintf(stderr, "%s: %s\n", label, e.msg);
        wl_destroy(w);
        return;
    }
    printf("%-26s Chakra read (wl_read_chakra) %.2f s, %.0f MB/s, %d tasks in %d classes; replay %.3f s; "
           "iteration %.4g s\n",
           label, t1 - t0, bytes / 1e6 / (t1 - t0), w->n_tasks, w->n_classes, t2 - t1, r.iteration_time_s);
    sim_result_free(&r);
    wl_destroy(w);
}

static int bench_chakra(const char *label, const char *model, int64_t tp, int64_t pp, int64_t gpus, int64_t gbs,
                        int64_t seq, bool replay)
{
    WlStep step;
    if (step_of(model, tp, pp, gpus, gbs, seq, false, &step)) return 1;
    TsError err = {0};
    Workload *w;
    double t0 = now_s();
    if (wl_build(&step, NULL, &w, &err)) {
        fprintf(stderr, "%s: %s\n", label, err.msg);
        return 1;
    }
    double t1 = now_s();
    /* task-graph replay of the built workload (simulate --workload on JSON) */
    {
        ClusterSpec cl;
        TsError ce = {0};
        if (hw_cluster_load("dgx-h100", gpus, &cl, &ce) == TS_OK) {
            HwNet net;
            hw_net_init(&net, &cl);
            SimResult r;
            double r0 = now_s();
            TsStatus rs = sim_replay_dag(w, &net, 0.10, false, &r, &ce);
            double r1 = now_s();
            if (rs == TS_OK)
                printf("%-26s replay (sim_replay_dag) %.1f ms for %d tasks, %.0f ns per task; iteration %.4g s\n",
                       label, (r1 - r0) * 1e3, w->n_tasks, (r1 - r0) * 1e9 / (double)w->n_tasks, r.iteration_time_s);
        }
    }
    char dir[] = "/tmp/bench_workload.XXXXXX";
    if (!mkdtemp(dir)) return 1;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s/trace", dir);
    int64_t bytes = 0;
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    TsStatus st = wl_write_chakra(w, NULL, prefix, &bytes, &err);
    double t2 = now_s();
    getrusage(RUSAGE_SELF, &r1);
#define TV(t) ((double)(t).tv_sec + 1e-6 * (double)(t).tv_usec)
    double usr = TV(r1.ru_utime) - TV(r0.ru_utime), sys = TV(r1.ru_stime) - TV(r0.ru_stime);
#undef TV
    printf("%-26s %6lld ranks %3d classes %8d tasks  IR %6.1f MiB  build %6.3f s  write %6.2f s  %8.1f MB  %6.0f MB/s\n",
           label, (long long)gpus, w->n_classes, w->n_tasks, (double)ts_arena_used_bytes(w->arena) / 1048576.0,
           t1 - t0, t2 - t1, (double)bytes / 1e6, (double)bytes / 1e6 / (t2 - t1));
    /* the wall-clock rate is bounded by the disk's writeback on a shared
     * VM; the CPU split says what the program itself costs */
    printf("%-26s CPU user %.2f s (encoding) + sys %.2f s (file creation, page cache): %.0f MB per CPU-second\n", "",
           usr, sys, (double)bytes / 1e6 / (usr + sys));
    if (st) fprintf(stderr, "%s: %s\n", label, err.msg);
    else if (replay) replay_set(label, prefix, gpus, (double)bytes);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    wl_destroy(w);
    return st ? 1 : 0;
}

int main(void)
{
    TsError err = {0};
    hw_model_init(&g_hw);
    if (hw_gpu_load("h100-sxm5-80gb", &g_hw.gpu, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    /* 1. SimAI */
    WlStep step;
    if (step_of("aicb-llama-405b", 8, 16, 1024, 128, 4096, true, &step)) return 1;
    WlAicbOptions ao = {.compat_1_1 = true};
    WlSimaiOptions so = {WL_SIMAI_HDR_V1_1};
    int reps = 200;
    size_t size = 0;
    double t0 = now_s();
    for (int i = 0; i < reps; i++) {
        Workload *w;
        if (wl_build_aicb(&step, &ao, &w, &err)) return 1;
        TsBuf b = {0};
        wl_write_simai(w, &so, &b);
        size = b.len;
        if (ts_write_file_atomic("/tmp/bench_workload_simai.txt", b.data, b.len, &err)) return 1;
        ts_buf_free(&b);
        wl_destroy(w);
    }
    double t = (now_s() - t0) / reps;
    unlink("/tmp/bench_workload_simai.txt");
    printf("%-26s %6d ranks  build+format+write %.3f ms  %zu bytes (target < 5 ms)\n", "simai aicb-llama-405b", 1024,
           t * 1e3, size);
    /* 2, 3. Chakra */
    int rc = bench_chakra("chakra gpt3-175b", "gpt3-175b", 8, 8, 1024, 1536, 2048, false);
    rc |= bench_chakra("chakra llama3-405b", "llama3-405b", 8, 16, 16384, 1024, 8192, false);
    /* 4. replaying a Chakra set (last: its memory dominates the max RSS) */
    rc |= bench_chakra("chakra gpt3-175b 128", "gpt3-175b", 8, 8, 128, 64, 2048, true);
    printf("max RSS %.1f MiB (IR memory scales with classes = pipeline stages; the encoder holds one rank's trace)\n",
           (double)rss_kb() / 1024.0);
    return rc;
}
