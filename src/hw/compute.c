/* Compute-time model: GEMM (tile + wave quantization), the attention core
 * (attention.c), memory-bound kernels, launch overhead; dispatch on GraphOp.
 *
 * Dimension legend: batch independent products of (M x K) @ (K x N); B batch,
 * A heads, Sq/Sk query/key length, D head dim.
 *
 * GEMM (NeuSight-style, optable.md 1.3; NVIDIA "Matrix Multiplication
 * Background" 3.1-3.2): for each candidate output tile (the preset's large
 * tile, half of it, a quarter; both orientations; split-K when the tiles do
 * not fill the SMs) time = ceil(tiles / SMs) waves x per-tile time, per-tile
 * time = 2 tm tn K / (peak/SMs x eff), eff = gemm_eff[dt] x tile factor x
 * K/(K + k_half) x alignment; plus a stream-K candidate (no partial wave,
 * split-tile fix-up cost). The fastest candidate wins (cuBLAS heuristics
 * pick kernels the same way), then max(compute, HBM traffic) + launch.
 *
 * FP32 without TF32 (simt_gemm) runs on the CUDA cores (cuBLAS sgemm
 * kernels), not on tensor cores: the preset's SIMT tile (128 x 128), its own
 * asymptote gemm_eff[fp32] of the FP32 peak and a short main-loop ramp
 * K/(K + simt_k_half) (a SIMT tile does 16x less work per K-step than the
 * FP32 machine balance would hide); no 16-byte alignment loss (scalar loads
 * serve any N). A half-size tile is used only when the large one leaves SMs
 * idle, split-K only when the half one does too. */
#include "hw_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Efficiency of a smaller tile relative to the preset's large tile: less
 * data reuse per loaded byte (lower arithmetic intensity in shared memory). */
#define TILE_HALF_FACTOR 0.90
#define TILE_QUARTER_FACTOR 0.75
/* Split-K partial sums are reduced by an extra pass: modest loss. */
#define SPLITK_FACTOR 0.92

void hw_model_init(HwModel *m) { memset(m, 0, sizeof *m); }

/* FP8 -> BF16 -> TF32 -> FP32 fallback when the GPU lacks a dtype. */
TsDtype hw_usable_dtype(const GpuSpec *g, TsDtype dt)
{
    static const TsDtype next[TS_DTYPE_COUNT] = {
        [TS_DTYPE_FP32] = TS_DTYPE_FP32, [TS_DTYPE_TF32] = TS_DTYPE_FP32,
        [TS_DTYPE_BF16] = TS_DTYPE_TF32, [TS_DTYPE_FP16] = TS_DTYPE_BF16,
        [TS_DTYPE_FP8] = TS_DTYPE_BF16};
    for (int i = 0; i < 4 && g->peak_flops[dt] <= 0; i++) dt = next[dt];
    return dt;
}

/* Storage bytes of activations moved by memory-bound kernels: FP8 training
 * keeps activations in BF16 outside GEMM inputs (Transformer Engine). */
static double act_bytes(TsDtype dt)
{
    int b = ts_dtype_bytes(dt);
    return b < 2 ? 2.0 : (double)b;
}

/* A 16-byte-aligned dim that is not a multiple of gemm_align_elems
 * (calibration_facts 1.4: 64 elements on A100 for full efficiency): a
 * quarter of the 0.70 loss ml-engineering measured for a misaligned SwiGLU
 * width on the H100. */
#define ALIGN_ELEMS_FACTOR 0.925

/* Alignment of the GEMM's N and K, the operands' row lengths: rows of a
 * multiple of 16 bytes take TMA / vectorized loads; 4- or 8-byte rows fall
 * back to slower kernels (gemm_align_penalty), 2-byte rows (an odd 16-bit
 * dim) to element-wise loads (gemm_align_penalty_2b). */
double hw_align_factor(const GpuSpec *g, int64_t n, int64_t k, TsDtype dt)
{
    int64_t b = ts_dtype_bytes(dt);
    double f = 1.0;
    int64_t dims[2] = {n, k};
    for (int i = 0; i < 2; i++) {
        int64_t row = dims[i] * b;
        if (row % 16 == 0) {
            if (dims[i] % g->gemm_align_elems) f *= ALIGN_ELEMS_FACTOR;
        } else {
            f *= row % 4 == 0 ? g->gemm_align_penalty : g->gemm_align_penalty_2b;
        }
    }
    return f;
}

/* Half-size (64 x 64) SIMT tile relative to the large one: 4 x 4 register
 * blocks per thread need 0.5 shared-memory words per FMA (8 x 8: 0.25), at the
 * SM's shared-memory bandwidth. 0.75 puts the H100 FP32 1024^3 GEMM (64 large
 * tiles for 132 SMs) at 38 TFLOP/s against 37.4 measured (calibration_facts 1.2). */
#define SIMT_SMALL_FACTOR 0.75

/* The pieces cuBLAS splits K into when `tiles` output tiles leave some of
 * the SMs idle: as many as fill them, K >= 1024 in pieces of at least 512
 * (1: no split). */
static int64_t splitk_pieces(int64_t sms, double tiles, int64_t K)
{
    if (!(tiles < (double)sms) || K < 1024) return 1;
    int64_t split = (int64_t)((double)sms / tiles), kmax = K / 512;
    if (split > kmax) split = kmax;
    return split < 1 ? 1 : split;
}

/* Time of the waves of one SIMT candidate tile, K split in `split` pieces
 * (each reduced afterwards: SPLITK_FACTOR). */
static double simt_tile_s(const GpuSpec *g, double peak_sm, int64_t batch, int64_t M, int64_t N, int64_t K,
                          int64_t tm, int64_t tn, double f, int64_t split)
{
    int64_t tiles = batch * ts_ceil_div(M, tm) * ts_ceil_div(N, tn) * split;
    double kt = (double)K / (double)split;
    double eff = g->gemm_eff[TS_DTYPE_FP32] * f * kt / (kt + g->simt_k_half) * (split > 1 ? SPLITK_FACTOR : 1.0);
    double waves = (double)ts_ceil_div(tiles, g->sm_count);
    return waves * 2.0 * (double)tm * (double)tn * kt / (peak_sm * eff);
}

/* FP32 on the CUDA cores (see the file comment); compute part only. When
 * even the half tile leaves SMs idle (one expert's few rows) cuBLAS splits
 * K over them (splitk_pieces, the tensor-core path's rule). */
static double simt_gemm(const GpuSpec *g, int64_t batch, int64_t M, int64_t N, int64_t K)
{
    const int64_t sms = g->sm_count;
    const double peak_sm = g->peak_flops[TS_DTYPE_FP32] / (double)sms;
    const int64_t tm[2] = {g->simt_tile_m, g->simt_tile_m / 2}, tn[2] = {g->simt_tile_n, g->simt_tile_n / 2};
    const double f[2] = {1.0, SIMT_SMALL_FACTOR};
    int64_t tiles[2];
    for (int i = 0; i < 2; i++) tiles[i] = batch * ts_ceil_div(M, tm[i]) * ts_ceil_div(N, tn[i]);
    double t = simt_tile_s(g, peak_sm, batch, M, N, K, tm[0], tn[0], f[0], 1);
    if (tiles[0] >= sms) return t;
    t = fmin(t, simt_tile_s(g, peak_sm, batch, M, N, K, tm[1], tn[1], f[1], 1));
    for (int i = 0; i < 2 && tiles[1] < sms; i++) {
        int64_t split = splitk_pieces(sms, (double)tiles[i], K);
        if (split > 1) t = fmin(t, simt_tile_s(g, peak_sm, batch, M, N, K, tm[i], tn[i], f[i], split));
    }
    return t;
}

double hw_gemm_model(const GpuSpec *g, int64_t batch, int64_t M, int64_t N, int64_t K, TsDtype dt)
{
    return hw_gemm_model_rows(g, batch, M, N, K, K, dt);
}

/* Candidates (m, n, factor): the large tile both ways, half tiles (f 0.9),
 * quarter tiles (f 0.75), as indices into the four tile edges {tm, tn,
 * tm/2, tn/2} for the candidate's rows and columns. */
static const int8_t CAND_EDGE[6][2] = {{0, 1}, {1, 0}, {0, 3}, {2, 1}, {2, 3}, {3, 2}};
static const double CAND_F[6] = {1.0, 1.0, TILE_HALF_FACTOR, TILE_HALF_FACTOR, TILE_QUARTER_FACTOR,
                                 TILE_QUARTER_FACTOR};

/* ceil(q) for q >= 0: an integer conversion where it is exact, libm's
 * ceil beyond (absurd shapes) */
static inline double ceil_pos(double q)
{
    if (!(q < 9e18)) return ceil(q);
    double w = (double)(int64_t)q;
    return w < q ? w + 1.0 : w;
}

/* The best tiled time of a 16-bit or narrower GEMM: wave-quantized tile
 * candidates with split-K, then Stream-K. */
static double tile_candidates(const GpuSpec *g, int64_t batch, int64_t M, int64_t N, int64_t K, double peak,
                              double base)
{
    const int64_t sms = g->sm_count, tm = g->gemm_tile_m, tn = g->gemm_tile_n;
    const double peak_sm = peak / (double)sms;
    /* tile counts in double: exact below 2^53, no overflow for absurd shapes;
     * rows and columns of the four tile edges, each division once, the
     * half edges only when a half or quarter candidate is costed */
    const int64_t edge[4] = {tm, tn, tm / 2, tn / 2};
    double rows[4], cols[4];
    for (int i = 0; i < 2; i++) rows[i] = (double)ts_ceil_div(M, edge[i]), cols[i] = (double)ts_ceil_div(N, edge[i]);
    /* No candidate beats the ideal: every tile full, no quantization, K in
     * one piece, 2 batch M N (K + k_half) / (peak base) over its factor f
     * (and SPLITK_FACTOR for Stream-K). Once the best so far is below a
     * group's bound (less a margin for rounding) the group is skipped: the
     * minimum is the same. */
    const double ideal = 2.0 * (double)batch * (double)M * (double)N * ((double)K + g->gemm_k_half) / (peak * base);
    double best = INFINITY, tiles01[2] = {0, 0};
    for (int c = 0; c < 6; c++) {
        if (c >= 2 && best < ideal / CAND_F[c] * (1.0 - 1e-9)) break; /* the rest: f 0.9, then 0.75 */
        if (c == 2)
            for (int i = 2; i < 4; i++)
                rows[i] = (double)ts_ceil_div(M, edge[i]), cols[i] = (double)ts_ceil_div(N, edge[i]);
        double tiles = (double)batch * rows[CAND_EDGE[c][0]] * cols[CAND_EDGE[c][1]];
        if (c < 2) tiles01[c] = tiles;
        /* split-K when one wave is not filled and K is long */
        int64_t split = splitk_pieces(sms, tiles, K);
        double kt = (double)K / (double)split;
        double eff = base * CAND_F[c] * kt / (kt + g->gemm_k_half) * (split > 1 ? SPLITK_FACTOR : 1.0);
        double waves = ceil_pos(tiles * (double)split / (double)sms);
        double t = waves * 2.0 * (double)edge[CAND_EDGE[c][0]] * (double)edge[CAND_EDGE[c][1]] * kt / (peak_sm * eff);
        if (t < best) best = t;
    }
    /* Stream-K (Osama et al., "Stream-K: Work-centric Parallel Decomposition
     * for Dense Matrix-Matrix Multiplication on the GPU", PPoPP'23; CUTLASS
     * 2.11+, cuBLAS 12): the K iterations of all output tiles are dealt out
     * evenly to the SMs, so there is no partial last wave; tiles split
     * between SMs are fixed up through global memory (SPLITK_FACTOR), and an
     * SM's contiguous K segment sets its main-loop ramp. Large tile, both
     * orientations. */
    for (int c = 0; c < 2 && !(best < ideal / SPLITK_FACTOR * (1.0 - 1e-9)); c++) {
        double per_sm = tiles01[c] * (double)K / (double)sms; /* K iterations per SM */
        double kseg = per_sm < (double)K ? per_sm : (double)K;
        double eff = base * kseg / (kseg + g->gemm_k_half) * SPLITK_FACTOR;
        double t = per_sm * 2.0 * (double)edge[CAND_EDGE[c][0]] * (double)edge[CAND_EDGE[c][1]] / (peak_sm * eff);
        if (t < best) best = t;
    }
    return best;
}

double hw_gemm_model_rows(const GpuSpec *g, int64_t batch, int64_t M, int64_t N, int64_t K, int64_t row2, TsDtype dt)
{
    dt = hw_usable_dtype(g, dt);
    double peak = g->peak_flops[dt];
    if (peak <= 0) return 0;
    double base = g->gemm_eff[dt] * hw_align_factor(g, N, row2, dt);
    double best = dt == TS_DTYPE_FP32 ? simt_gemm(g, batch, M, N, K) : tile_candidates(g, batch, M, N, K, peak, base);
    /* A and B at the compute dtype, C at >= 16 bit (FP8 GEMMs write BF16). */
    double eb = (double)ts_dtype_bytes(dt);
    double bytes = (double)batch * (((double)M * (double)K + (double)K * (double)N) * eb +
                                    (double)M * (double)N * act_bytes(dt));
    double tmem = bytes / (g->hbm_bw_bytes_per_s * g->mem_eff);
    return (best > tmem ? best : tmem) + g->launch_s;
}

static double mem_model(const GpuSpec *g, double bytes)
{
    return (bytes + g->mem_half_bytes) / (g->hbm_bw_bytes_per_s * g->mem_eff) + g->launch_s;
}

/* Tensor-core times measured at the calibration's SM clock, as the model's
 * own are at the preset's clock: the simulator's tensor factor (clock /
 * sustained clock) then brings both to the sustained clock. */
static double clock_ratio(const HwModel *m, double f)
{
    return f > 0 && m->gpu.clock_mhz > 0 ? f / m->gpu.clock_mhz : 1.0;
}

/* The factor on the GEMM entries: for version 2 their median clock to the
 * preset's. Version 3 entries are at their GPU's sustained state (the
 * reference back to back). Where the preset names that reference's time on
 * the units it was measured on (model.calib_reference_us), they are read
 * relative to those units: the model's reference time over theirs, so the
 * file brings its GPU's shape efficiencies and its distance from those units
 * and the preset keeps its sustained rate, which published full-node runs set
 * (a lone GPU's GEMMs back to back run 6-8 % above it: data/calibrations).
 * Else they stand for the preset's sustained clock. */
bool hw_calib_against_units(const HwModel *m)
{
    int64_t d[3];
    TsDtype dt;
    return m->gpu.calib_ref_s > 0 && hw_calib_reference(m->calib, d, &dt) > 0 && dt == TS_DTYPE_BF16 &&
           d[0] == 4096 && d[1] == 4096 && d[2] == 4096;
}

static double calib_clock(const HwModel *m)
{
    const HwCalib *c = m->calib;
    if (!hw_calib_sustained(c)) return clock_ratio(m, hw_calib_clock_mhz(c));
    if (hw_calib_against_units(m))
        return hw_gemm_model(&m->gpu, 1, 4096, 4096, 4096, TS_DTYPE_BF16) / m->gpu.calib_ref_s;
    return clock_ratio(m, hw_sustained_clock_mhz(&m->gpu));
}

static double gemm_time(const HwModel *m, int64_t batch, int64_t M, int64_t N, int64_t K, int64_t row2, TsDtype dt)
{
    if (batch <= 0 || M <= 0 || N <= 0 || K <= 0) return 0;
    double t = hw_gemm_model_rows(&m->gpu, batch, M, N, K, row2, dt);
    if (m->calib) {
        double dims[4] = {(double)batch, (double)M, (double)N, (double)K};
        t = hw_calib_correct(m, HW_CAL_GEMM, dims, 4, dt, false, calib_clock(m), t);
    }
    return t;
}

double hw_gemm_time_s(const HwModel *m, int64_t batch, int64_t M, int64_t N, int64_t K, TsDtype dt)
{
    return gemm_time(m, batch, M, N, K, K, dt);
}

double hw_gemm_wgrad_time_s(const HwModel *m, int64_t batch, int64_t M, int64_t N, int64_t K, TsDtype dt)
{
    return gemm_time(m, batch, M, N, K, M, dt);
}

double hw_gemm_odd_lda_time_s(const HwModel *m, int64_t batch, int64_t M, int64_t N, int64_t K, TsDtype dt)
{
    return gemm_time(m, batch, M, N, K, 1, dt); /* rows one element apart: an odd row's alignment */
}

double hw_gemm_flops_per_s(const HwModel *m, int64_t batch, int64_t M, int64_t N, int64_t K, TsDtype dt)
{
    double t = hw_gemm_time_s(m, batch, M, N, K, dt);
    return t > 0 ? 2.0 * (double)batch * (double)M * (double)N * (double)K / t : 0;
}

double hw_attention_time_s(const HwModel *m, int64_t B, int64_t heads, int64_t sq, int64_t sk, int64_t d,
                           bool causal, bool backward, TsDtype dt)
{
    if (B <= 0 || heads <= 0 || sq <= 0 || sk <= 0 || d <= 0) return 0;
    double t = hw_attn_model(&m->gpu, B, heads, sq, sk, d, causal, backward, dt);
    if (m->calib) {
        double dims[6] = {(double)B, (double)heads, (double)sq, (double)sk, (double)d,
                          causal ? 1.0 : 0.0};
        double f = clock_ratio(m, hw_calib_attn_clock_mhz(m->calib));
        if (hw_calib_attn_flash(m->calib)) f /= hw_attn_fa2_factor(&m->gpu, d, backward);
        t = hw_calib_correct(m, backward ? HW_CAL_ATTN_BWD : HW_CAL_ATTN_FWD, dims, 6, dt, false, f, t);
    }
    return t;
}

double hw_attn_dropout_time_s(const HwModel *m, int64_t B, int64_t heads, int64_t sq, int64_t sk, bool causal,
                              bool backward, double p)
{
    if (!(p > 0) || B <= 0 || heads <= 0 || sq <= 0 || sk <= 0) return 0;
    return hw_attn_drop_model(&m->gpu, B, heads, sq, sk, causal, backward);
}

double hw_fused_attention_time_s(const HwModel *m, int64_t B, int64_t heads, int64_t sq, int64_t sk, int64_t d,
                                 bool causal, bool backward, TsDtype dt, double p)
{
    return hw_attention_time_s(m, B, heads, sq, sk, d, causal, backward, dt) +
           hw_attn_dropout_time_s(m, B, heads, sq, sk, causal, backward, p);
}

double hw_generic_time_s(const HwModel *m, double elements)
{
    double r = m->gpu.eager_generic_gelem_per_ms;
    return r > 0 && elements > 0 ? elements / (r * 1e12) : 0;
}

/* PyTorch's LayerNorm and rms_norm kernels (part F of
 * bench/data/gpu/kernels_2026-11-27_{h100,h200}.jsonl, host-ahead, bf16):
 * over 4096-16384 rows they stream 1.9-2.1 TB/s on an H100 and 2.4-3.0 on an
 * H200 where an add streams 2.9 / 4.1, and LayerNorm at 768-1024 wide rows
 * takes about 2.35 ns a row forward and 6.6 backward on both (a block
 * reduces each row: its reduction and synchronisation bound a short row). */
double hw_norm_time_s(const HwModel *m, double bytes, double rows, int pass)
{
    const GpuSpec *g = &m->gpu;
    double eff = g->eager_norm_eff > 0 ? g->eager_norm_eff : 1.0;
    double t = hw_memory_time_s(m, bytes) / eff, r = rows * g->eager_norm_row_s[pass ? 1 : 0];
    return r > t ? r : t;
}

double hw_memory_time_s(const HwModel *m, double bytes)
{
    if (!(bytes > 0)) return 0;
    double t = mem_model(&m->gpu, bytes);
    if (m->calib) {
        double dims[1] = {bytes};
        t = hw_calib_correct(m, HW_CAL_MEMORY, dims, 1, TS_DTYPE_BF16, true, 1.0, t);
    }
    return t;
}

/* ---- GraphOp dispatch ------------------------------------------------------- */
static double gemm_pass(const HwModel *m, const GraphOp *op, HwPass pass, TsDtype dt)
{
    const int64_t *d = op->dims;
    if (op->kind == GRAPH_OP_GEMM) { /* {M tokens, K in, N out} */
        int64_t M = d[0], K = d[1], N = d[2];
        switch (pass) {
        case HW_PASS_FWD: return hw_gemm_time_s(m, 1, M, N, K, dt);
        case HW_PASS_DGRAD: return op->dgrad_flops > 0 ? hw_gemm_time_s(m, 1, M, K, N, dt) : 0;
        case HW_PASS_WGRAD: return op->wgrad_flops > 0 ? hw_gemm_wgrad_time_s(m, 1, K, N, M, dt) : 0;
        }
        return 0;
    }
    /* BATCHED_GEMM {batch*heads, M, K, N}: both operands are activations; the
     * second product's gradient sits in DGRAD or WGRAD per the graph's flops. */
    int64_t b = d[0], M = d[1], K = d[2], N = d[3];
    double fwd = 2.0 * (double)b * (double)M * (double)N * (double)K;
    switch (pass) {
    case HW_PASS_FWD: return hw_gemm_time_s(m, b, M, N, K, dt);
    case HW_PASS_DGRAD: {
        if (!(op->dgrad_flops > 0)) return 0;
        double t = hw_gemm_time_s(m, b, M, K, N, dt);
        if (op->dgrad_flops > 1.5 * fwd) t += hw_gemm_time_s(m, b, K, N, M, dt);
        return t;
    }
    case HW_PASS_WGRAD: return op->wgrad_flops > 0 ? hw_gemm_time_s(m, b, K, N, M, dt) : 0;
    }
    return 0;
}

static double attn_pass(const HwModel *m, const GraphOp *op, HwPass pass, TsDtype dt)
{
    /* {B, A, Sq, Sk, D, Dv}: causal inferred from the exact forward FLOPs
     * (the graph halves them for causal masks; see hw.h). */
    const int64_t *d = op->dims;
    if (pass == HW_PASS_WGRAD) return 0;
    int64_t dv = d[5] > 0 ? d[5] : d[4];
    double full = 2.0 * (double)d[0] * (double)d[1] * (double)d[2] * (double)d[3] * (double)(d[4] + dv);
    bool causal = op->fwd_flops > 0 && op->fwd_flops < 0.75 * full;
    int64_t dd = (d[4] + dv + 1) / 2;
    return hw_fused_attention_time_s(m, d[0], d[1], d[2], d[3], dd, causal, pass != HW_PASS_FWD, dt, op->drop);
}

/* Bytes a memory-bound op moves, from its dims (so per-rank copies with
 * divided dims cost right): (read + write) element counts x element size. */
static double mem_bytes(const GraphOp *op, HwPass pass, double eb)
{
    const int64_t *d = op->dims;
    bool fwd = pass == HW_PASS_FWD;
    switch (op->kind) {
    case GRAPH_OP_SOFTMAX: return (double)d[0] * eb * (fwd ? 2.0 : 3.0);
    case GRAPH_OP_NORM: return (double)d[0] * (double)d[1] * eb * (fwd ? 2.0 : 3.0);
    case GRAPH_OP_ACTIVATION: return (double)d[0] * eb * (fwd ? 2.0 : 3.0);
    case GRAPH_OP_ELEMENTWISE: {
        double in = d[1] > 0 ? (double)d[1] : 2.0;
        return (double)d[0] * eb * (in + 1.0);
    }
    case GRAPH_OP_EMBEDDING: return (double)d[0] * (double)d[1] * eb * (fwd ? 2.0 : 3.0);
    case GRAPH_OP_DROPOUT: return (double)d[0] * (2.0 * eb + 1.0);
    case GRAPH_OP_LOSS: return (double)d[0] * (double)d[1] * eb * 2.0;
    case GRAPH_OP_ROPE: return (double)d[0] * (double)d[1] * (double)d[2] * eb * 2.0;
    default: return 0;
    }
}

double hw_op_time_s(const HwModel *m, const GraphOp *op, HwPass pass, TsDtype dt)
{
    switch (op->kind) {
    case GRAPH_OP_GEMM:
    case GRAPH_OP_BATCHED_GEMM: return gemm_pass(m, op, pass, dt);
    case GRAPH_OP_ATTENTION_CORE: return attn_pass(m, op, pass, dt);
    case GRAPH_OP_ROUTER: { /* {tokens, H, E, K}: logits GEMM + top-k/softmax pass */
        const int64_t *d = op->dims;
        double t = 0;
        if (pass == HW_PASS_FWD) t = hw_gemm_time_s(m, 1, d[0], d[2], d[1], dt);
        else if (pass == HW_PASS_DGRAD) t = hw_gemm_time_s(m, 1, d[0], d[1], d[2], dt);
        else return hw_gemm_wgrad_time_s(m, 1, d[1], d[2], d[0], dt);
        return t + hw_memory_time_s(m, (double)d[0] * (double)d[2] * 4.0 * 2.0);
    }
    default:
        if (pass == HW_PASS_WGRAD) return 0; /* norm affine grads fused in DGRAD */
        return hw_memory_time_s(m, mem_bytes(op, pass, act_bytes(dt)));
    }
}

/* ---- calibration correction --------------------------------------------------- */
static double model_at(const GpuSpec *g, HwCalKind kind, const double *d, TsDtype dt)
{
    switch (kind) {
    case HW_CAL_GEMM:
        return hw_gemm_model(g, (int64_t)d[0], (int64_t)d[1], (int64_t)d[2], (int64_t)d[3], dt);
    case HW_CAL_ATTN_FWD:
    case HW_CAL_ATTN_BWD:
        return hw_attn_model(g, (int64_t)d[0], (int64_t)d[1], (int64_t)d[2], (int64_t)d[3], (int64_t)d[4],
                          d[5] > 0.5, kind == HW_CAL_ATTN_BWD, dt);
    case HW_CAL_MEMORY: return mem_model(g, d[0]);
    default: return 0;
    }
}

/* Exact match: the measurement. Otherwise the model times the inverse
 * squared-distance weighted ratio measured/model of the nearest entries,
 * so the table's bias carries to nearby shapes and the model's shape terms
 * (tiles, waves, K ramp) still act between grid points. */
/* An attention entry speaks for a query with the same mask and head
 * dimension and about as much parallel work (batch x heads within 2x): its
 * measured/model ratio is mostly how full the GPU was, which does not carry
 * from 8 heads of one sequence to 16 x 12. Else the model alone. */
static bool attn_alike(const double *q, const double *e)
{
    double bh = q[0] * q[1], ebh = e[0] * e[1];
    return q[5] == e[5] && q[4] == e[4] && bh <= 2.0 * ebh && ebh <= 2.0 * bh;
}

static bool gemm_alike(const double *q, const double *e)
{
    return q[0] <= 2.0 * e[0] && e[0] <= 2.0 * q[0];
}

double hw_calib_correct(const HwModel *m, HwCalKind kind, const double *dims, int n, TsDtype dt,
                        bool any_dtype, double scale, double model_t)
{
    int idx[HW_CAL_NEAR];
    double d2[HW_CAL_NEAR];
    int k = hw_calib_nearest(m->calib, kind, dims, n, dt, any_dtype, idx, d2);
    if (k == 0) return model_t;
    double ed[HW_CAL_DIMS], meas;
    TsDtype edt;
    if (d2[0] < 1e-12) {
        hw_calib_entry(m->calib, idx[0], ed, &edt, &meas);
        return meas * scale;
    }
    double wsum = 0, rsum = 0;
    bool attn = kind == HW_CAL_ATTN_FWD || kind == HW_CAL_ATTN_BWD;
    for (int i = 0; i < k; i++) {
        hw_calib_entry(m->calib, idx[i], ed, &edt, &meas);
        if (attn && !attn_alike(dims, ed)) continue;
        if (kind == HW_CAL_GEMM && !gemm_alike(dims, ed)) continue;
        double mt = model_at(&m->gpu, kind, ed, edt);
        if (!(mt > 0)) continue;
        double w = 1.0 / d2[i];
        wsum += w;
        rsum += w * log(meas / mt);
    }
    return wsum > 0 ? model_t * exp(rsum / wsum) * scale : model_t;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* q-quantile of n sorted values, linear between neighbours */
static double quantile(const double *v, int n, double q)
{
    double at = q * (double)(n - 1);
    int i = (int)at;
    return i + 1 < n ? v[i] + (at - (double)i) * (v[i + 1] - v[i]) : v[n - 1];
}

/* An entry's time as m reads it over the model's, at its own shape: GEMM
 * entries of dtype dt (kind HW_CAL_GEMM), or attention entries of a pass
 * (any dtype); 0 for the other entries. */
static double entry_fit(const HwModel *m, const HwModel *bare, HwCalKind want, TsDtype dt, int i)
{
    double d[HW_CAL_DIMS], t, model, read;
    TsDtype edt;
    if (hw_calib_entry_kind(m->calib, i) != want) return 0;
    hw_calib_entry(m->calib, i, d, &edt, &t);
    if (want == HW_CAL_GEMM) {
        if (edt != dt) return 0;
        int64_t b = (int64_t)d[0], M = (int64_t)d[1], N = (int64_t)d[2], K = (int64_t)d[3];
        model = hw_gemm_time_s(bare, b, M, N, K, dt);
        read = hw_gemm_time_s(m, b, M, N, K, dt);
    } else {
        int64_t v[5] = {(int64_t)d[0], (int64_t)d[1], (int64_t)d[2], (int64_t)d[3], (int64_t)d[4]};
        bool bwd = want == HW_CAL_ATTN_BWD, causal = d[5] > 0.5;
        model = hw_attention_time_s(bare, v[0], v[1], v[2], v[3], v[4], causal, bwd, edt);
        read = hw_attention_time_s(m, v[0], v[1], v[2], v[3], v[4], causal, bwd, edt);
    }
    return model > 0 ? read / model : 0;
}

static int calib_fit(const HwModel *m, HwCalKind want, TsDtype dt, double q[3])
{
    int n = m->calib ? hw_calib_entries(m->calib) : 0, k = 0;
    double *r = n > 0 ? malloc((size_t)n * sizeof *r) : NULL;
    if (!r) return 0;
    HwModel bare = *m;
    bare.calib = NULL;
    for (int i = 0; i < n; i++) {
        double f = entry_fit(m, &bare, want, dt, i);
        if (f > 0) r[k++] = f;
    }
    if (k > 0) {
        qsort(r, (size_t)k, sizeof *r, cmp_double);
        q[0] = quantile(r, k, 0.1), q[1] = quantile(r, k, 0.5), q[2] = quantile(r, k, 0.9);
    }
    free(r);
    return k;
}

int hw_calib_gemm_fit(const HwModel *m, TsDtype dt, double q[3]) { return calib_fit(m, HW_CAL_GEMM, dt, q); }

int hw_calib_attn_fit(const HwModel *m, bool backward, double q[3])
{
    return calib_fit(m, backward ? HW_CAL_ATTN_BWD : HW_CAL_ATTN_FWD, TS_DTYPE_BF16, q);
}
