/* Attention-core time model: FlashAttention-style kernels (cuDNN fused
 * attention, FlashAttention 2/3) as thread blocks over the SMs.
 *
 * The forward runs one thread block (CTA) per (batch, head, 128-row query
 * tile); it walks the key/value tiles the mask leaves it: all of them without
 * a mask, i + 1 for query tile i of a causal square mask. The backward runs
 * one CTA per key/value tile, walking the query tiles (the same counts). A
 * CTA costs a fixed part (loading its tile, writing its output, the softmax
 * statistics: `attn_seq_half` tokens of key loop; twice that backward; x
 * attn_causal_half / 2 causal) plus one tile time per tile it walks, a tile
 * time being 4 T^2 d FLOPs (x2.5 backward) at the per-SM share of the peak
 * times the preset's efficiency. CTAs are handed to the SMs in launch order
 * (query tiles of one head, then the next head), one per SM, each SM taking
 * the next CTA when it finishes one: the time is when the last SM finishes
 * (makespan).
 * A single wave is its longest CTA; a causal kernel with few heads is set by
 * its diagonal-length rows, not its mean.
 *
 * Measured on an H100 and an H200 (bench/data/gpu/attn_2026-11-27_*.jsonl,
 * cuDNN attention, host-ahead timing, 30 shapes each): forward 3.5 / 3.6 %
 * MAPE, backward 6.1 / 5.8 %, with the five parameters of the H100 preset
 * (set from the H100's rows alone). */
#include "hw_internal.h"

#include <math.h>

#define ATTN_TILE 128 /* rows per CTA, query (forward) or key (backward) */

/* Finish time (in tile times) of `heads` x `n` CTAs handed out in launch
 * order to `p` SMs; CTA i of a head costs c0 + (causal ? i + 1 : m).
 * Equal CTAs (no mask) finish in whole waves. Causal CTAs of one head are
 * launched shortest first, so the last ones handed out are the longest: the
 * kernel ends CAUSAL_TAIL of a longest CTA after the SMs' mean finish. That
 * constant is the in-order list schedule's own: simulated CTA by CTA over
 * 1-512 heads x 2-256 tiles, c0 1-5, 132 SMs, it gives 0.58-0.67 from 1.5
 * to 8 waves and beyond; the closed form is within 0.8 % of the simulation
 * on average, 2 % at the 90th percentile (up to 19 % at 2 tiles a row). */
#define CAUSAL_TAIL 0.63

static double makespan(int64_t heads, int64_t n, int64_t m, bool causal, double c0, int64_t p)
{
    int64_t jobs = heads * n;
    double longest = c0 + (double)(causal ? n : m);
    double work = causal ? (double)heads * ((double)n * c0 + 0.5 * (double)n * (double)(n + 1))
                         : (double)jobs * longest;
    if (p <= 0) return work; /* no SM count: the work alone, at the whole GPU's rate */
    if (!causal) return ceil((double)jobs / (double)p) * longest;
    if (jobs <= p) return longest;
    double t = work / (double)p + CAUSAL_TAIL * longest;
    return t > longest ? t : longest;
}

double hw_attn_model(const GpuSpec *g, int64_t B, int64_t heads, int64_t sq, int64_t sk, int64_t d, bool causal,
                     bool backward, TsDtype dt)
{
    /* Attention runs in BF16 even in FP8 training (TE's default; FP8 DPA is opt-in). */
    if (dt == TS_DTYPE_FP8) dt = TS_DTYPE_BF16;
    dt = hw_usable_dtype(g, dt);
    double peak = g->peak_flops[dt];
    if (peak <= 0) return 0;
    bool diag = causal && sq == sk;
    /* forward: CTAs over query tiles walking key tiles; backward the other way */
    int64_t rows = backward ? sk : sq, cols = backward ? sq : sk;
    int64_t n = (rows + ATTN_TILE - 1) / ATTN_TILE, m = (cols + ATTN_TILE - 1) / ATTN_TILE;
    double c0 = g->attn_seq_half / ATTN_TILE * (backward ? 2.0 : 1.0) * (diag ? 0.5 * g->attn_causal_half : 1.0);
    double eff = (backward ? g->attn_bwd_eff : g->attn_fwd_eff) * (diag ? g->attn_causal_eff : 1.0);
    if (d < 128) {
        double f = d >= 64 ? g->attn_hd64_factor + (1.0 - g->attn_hd64_factor) * (double)(d - 64) / 64.0
                           : g->attn_hd64_factor * (double)d / 64.0;
        eff *= f;
    }
    int64_t p = g->sm_count > 0 ? g->sm_count : 0;
    double tile_flops = 4.0 * ATTN_TILE * ATTN_TILE * (double)d * (backward ? 2.5 : 1.0);
    double t = makespan(B * heads, n, m, diag, c0, p) * tile_flops / (peak / (double)(p > 0 ? p : 1) * eff);
    /* Never faster than reading Q, K, V and writing O once (x2.5 backward). */
    double bytes = (double)B * (double)heads * (2.0 * (double)sq + 2.0 * (double)sk) * (double)d *
                   (double)ts_dtype_bytes(dt) * (backward ? 2.5 : 1.0);
    double tmem = bytes / (g->hbm_bw_bytes_per_s * g->mem_eff);
    return (t > tmem ? t : tmem) + g->launch_s;
}

/* Dropout on the probabilities inside the fused kernel draws a random
 * number and applies the mask for every score of the tiles it walks (the
 * backward draws them again): a time per element of those 128 x 128 tiles,
 * the diagonal tiles whole under a causal mask (gpu_defaults' source). */
double hw_attn_drop_model(const GpuSpec *g, int64_t B, int64_t heads, int64_t sq, int64_t sk, bool causal,
                          bool backward)
{
    double n = (double)((sq + ATTN_TILE - 1) / ATTN_TILE), m = (double)((sk + ATTN_TILE - 1) / ATTN_TILE);
    double tiles = causal && sq == sk ? 0.5 * n * (n + 1.0) : n * m;
    return (double)B * (double)heads * tiles * ATTN_TILE * ATTN_TILE * g->attn_drop_elem_s[backward ? 1 : 0];
}

/* FlashAttention-2 runs Ampere's mma.sync on Hopper where cuDNN runs wgmma:
 * its time over cuDNN's is set per head dim from measurements (H100 and H200,
 * 30 shapes each: 1.5-1.6x at head dim 64, 1.8-1.9x at 128), linear between. */
double hw_attn_fa2_factor(const GpuSpec *g, int64_t d, bool backward)
{
    int i = backward ? 1 : 0;
    double hi = g->attn_fa2_factor[i], lo = g->attn_fa2_factor_hd64[i];
    if (d >= 128) return hi;
    if (d <= 64) return lo;
    return lo + (hi - lo) * (double)(d - 64) / 64.0;
}
