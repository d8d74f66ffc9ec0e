/* grouped.c — a grouped GEMM (torch._grouped_mm: PyTorch's CUTLASS grouped
 * kernel on Hopper): one launch over `groups` products whose rows, the
 * tokens routed to each expert, differ from group to group.
 *
 * Each group's rows are cut into whole output tiles, so a group of c rows
 * costs ceil(c / tm) tile rows, not c / tm: with the tokens of a step
 * spread over the experts (binomially, standard deviation sd about the mean
 * M), the expected padding is what the real per-expert counts cost, most of
 * all for fine-grained experts (M of a few hundred rows or less). The tiles
 * of all groups share one persistent grid (waves of SMs); there is no
 * split-K or stream-K. The weight gradient is grouped along K (each expert
 * reduces over its own tokens): its K loop runs in whole k-tiles of its
 * group's count. A small kernel writes the groups' shapes and pointers
 * before the GEMM (two launches). */
#include "hw_internal.h"

#include <math.h>

/* The k-tile of Hopper's 16-bit tensor-core kernels (64 elements, 128 B). */
#define GROUPED_K_TILE 64
/* Quadrature points over +-4 standard deviations. */
#define GROUPED_QUAD 41

/* E[ceil(c / q)] for c ~ Normal(mean, sd), c >= 0. */
static double expected_ceil(double mean, double sd, double q)
{
    if (!(sd > 0)) return ceil(mean / q);
    double num = 0, den = 0;
    for (int i = 0; i < GROUPED_QUAD; i++) {
        double z = -4.0 + 8.0 * (double)i / (GROUPED_QUAD - 1), w = exp(-0.5 * z * z);
        double c = mean + z * sd;
        num += w * (c > 0 ? ceil(c / q) : 0);
        den += w;
    }
    return num / den;
}

/* Compute time of the fastest tile: groups x rows (M, spread sd) x N over
 * K, or (k_grouped) groups x M x N over a K spread by sd. */
static double grouped_compute(const GpuSpec *g, int64_t groups, double M, double sd, int64_t N, double K,
                              bool k_grouped, TsDtype dt)
{
    double peak_sm = g->peak_flops[dt] / (double)g->sm_count;
    double base = g->gemm_eff[dt] * g->grouped_gemm_eff * hw_align_factor(g, N, k_grouped ? (int64_t)M : (int64_t)K, dt);
    int64_t tm = g->gemm_tile_m, tn = g->gemm_tile_n;
    const struct { int64_t m, n; double f; } cand[4] = {
        {tm, tn, 1.0}, {tn, tm, 1.0}, {tm, tn / 2, 0.90}, {tm / 2, tn, 0.90}};
    double kpad = k_grouped ? expected_ceil(K, sd, GROUPED_K_TILE) * GROUPED_K_TILE : K;
    double best = INFINITY;
    for (int c = 0; c < 4; c++) {
        double rows = k_grouped ? ceil(M / (double)cand[c].m) : expected_ceil(M, sd, (double)cand[c].m);
        double tiles = (double)groups * rows * (double)ts_ceil_div(N, cand[c].n);
        double eff = base * cand[c].f * K / (K + g->gemm_k_half);
        double t = ceil(tiles / (double)g->sm_count) * 2.0 * (double)cand[c].m * (double)cand[c].n * kpad /
                   (peak_sm * eff);
        if (t < best) best = t;
    }
    return best;
}

double hw_grouped_gemm_time_s(const HwModel *m, int64_t groups, int64_t M, double sd, int64_t N, int64_t K,
                              bool k_grouped, TsDtype dt)
{
    if (groups <= 0 || M <= 0 || N <= 0 || K <= 0) return 0;
    const GpuSpec *g = &m->gpu;
    dt = hw_usable_dtype(g, dt);
    if (g->peak_flops[dt] <= 0 || dt == TS_DTYPE_FP32) return hw_gemm_time_s(m, groups, M, N, K, dt);
    double t = grouped_compute(g, groups, (double)M, sd, N, (double)K, k_grouped, dt);
    double eb = (double)ts_dtype_bytes(dt), rows = (double)groups * (double)(k_grouped ? K : M);
    double inner = (double)(k_grouped ? M : K);
    double bytes = (rows * inner + (double)groups * (double)(k_grouped ? M : K) * (double)N) * eb +
                   (k_grouped ? (double)groups * (double)M * (double)N : rows * (double)N) * (eb < 2 ? 2 : eb);
    double tmem = bytes / (g->hbm_bw_bytes_per_s * g->mem_eff);
    t = (t > tmem ? t : tmem) + 2.0 * g->launch_s;
    /* a calibration corrects the grouped GEMM as it does the batched one */
    if (m->calib) t *= hw_gemm_time_s(m, groups, M, N, K, dt) / hw_gemm_model(g, groups, M, N, K, dt);
    return t;
}
