/* bench_profile: time to build the module graph and profile it (per-module
 * stats + the full DeepSpeed-style text report) for the largest presets, on
 * one core; peak memory as arena bytes and getrusage max RSS.
 * Prints figures only; nothing here is asserted. */
#include "trainsim/graph.h"
#include "trainsim/report.h"

#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); /* the dev box is shared: CPU time, faults included */
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(void)
{
    static const char *const models[] = {"llama3-405b", "deepseek-v3", "gpt-1t"};
    enum { REPS = 15 };
    TsError err = {0};
    RepCompute comp;
    if (rep_compute_init(&comp, "h100-sxm5-80gb", TS_DTYPE_BF16, &err) != TS_OK) {
        fprintf(stderr, "bench_profile: %s\n", err.msg);
        return 1;
    }
    printf("%-12s %7s %7s %7s | %9s %9s %9s | %9s %9s\n", "model", "modules", "ops", "params", "build ms",
           "stats ms", "text ms", "arena MB", "text MB");
    for (size_t k = 0; k < sizeof models / sizeof models[0]; k++) {
        ModelSpec m;
        if (model_preset(models[k], &m, &err) != TS_OK) {
            fprintf(stderr, "bench_profile: %s\n", err.msg);
            return 1;
        }
        GraphOptions o;
        graph_options_init(&o);
        o.batch = 1;
        o.seq = 4096;
        RepProfileOptions po;
        rep_profile_options_init(&po);
        double tb[REPS], ts[REPS], tt[REPS];
        size_t arena = 0, text = 0;
        int32_t nm = 0, no = 0, np = 0;
        for (int r = 0; r < REPS; r++) {
            ModuleGraph *g;
            double t0 = now_s();
            if (graph_build(&m, &o, &g, &err) != TS_OK) {
                fprintf(stderr, "bench_profile: %s\n", err.msg);
                return 1;
            }
            double t1 = now_s();
            RepModuleStats *st = malloc(sizeof *st * (size_t)g->n_mods);
            if (!st) return 1;
            rep_module_stats(g, &comp, st);
            double t2 = now_s();
            TsBuf b = {0};
            rep_profile_text(g, &comp, &po, &b);
            double t3 = now_s();
            tb[r] = t1 - t0;
            ts[r] = t2 - t1;
            tt[r] = t3 - t2;
            arena = ts_arena_used_bytes(g->arena);
            text = b.len;
            nm = g->n_mods, no = g->n_ops, np = g->n_params;
            free(st);
            ts_buf_free(&b);
            graph_destroy(g);
        }
        qsort(tb, REPS, sizeof tb[0], cmp_d);
        qsort(ts, REPS, sizeof ts[0], cmp_d);
        qsort(tt, REPS, sizeof tt[0], cmp_d);
        printf("%-12s %7d %7d %7d | %9.3f %9.3f %9.3f | %9.2f %9.3f\n", models[k], nm, no, np, 1e3 * tb[REPS / 2],
               1e3 * ts[REPS / 2], 1e3 * tt[REPS / 2], (double)arena / 1e6, (double)text / 1e6);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("median of %d runs (thread CPU time), B=1 S=4096, one thread; peak RSS %.1f MB\n", REPS,
           (double)ru.ru_maxrss / 1024.0);
    return 0;
}
