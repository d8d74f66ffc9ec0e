/* GPU presets: data/gpus/<name>.json ("trainsim-gpu" v1) <-> GpuSpec.
 * Human units in the file (TFLOP/s, TB/s, GB, MB, us), SI units in memory. */
#include "hw_internal.h"

#include <math.h>
#include <string.h>

/* The learned sink's backward a query row, in ns at the preset's clock
 * (gpu_defaults; its source there). */
#define GPU_SINK_BWD_ROW_NS 1.74
/* A duplicate index's walk in PyTorch's sort-based index_put_, in us
 * (gpu_defaults; its source there). */
#define GPU_INDEX_PUT_DUP_US 2.0
/* Dropout inside the fused attention, ps a score element forward and
 * backward at the preset's clock (gpu_defaults; its source there). */
#define GPU_ATTN_DROP_PS_FWD 1.02
#define GPU_ATTN_DROP_PS_BWD 0.53

static const char *const GPU_KEYS[] = {
    "format", "version", "name", "source", "vendor", "arch", "peak_tflops", "hbm_tb_per_s",
    "hbm_gb", "sm_count", "l2_mb", "power_w", "clock_mhz", "sustained_clock_mhz", "single_clock_mhz",
    "scaleup_gb_per_s", "model", NULL};
static const char *const MODEL_KEYS[] = {
    "gemm_eff", "grouped_gemm_eff", "gemm_tile", "gemm_k_half", "gemm_align_penalty", "gemm_align_penalty_2b",
    "gemm_align_elems",
    "simt_tile", "simt_k_half",
    "attn_fwd_eff", "attn_bwd_eff", "attn_seq_half", "attn_hd64_factor", "attn_causal_half",
    "attn_causal_eff", "attn_fa2_factor", "attn_fa2_factor_hd64", "attn_sink_bwd_ns_per_row",
    "attn_dropout_ps_per_elem", "index_put_dup_us", "calib_reference_us",
    "mem_eff", "mem_half_mb", "launch_us", "eager_generic_gelem_per_ms", "eager_norm", "software_2024", "notes", NULL};
static const char *const SW2024_KEYS[] = {"gemm_eff_fp8", "attn_factor", NULL};
static const char *const NORM_KEYS[] = {"eff", "row_ns", NULL};
static const char *const DTYPE_KEYS[] = {
#define X(e, n, b) n,
    TS_DTYPE_LIST(X)
#undef X
    NULL};

/* Defaults for model parameters a file leaves out (generic NVIDIA Hopper-ish;
 * docs/hardware.md). Peaks, HBM and SMs are required. */
static void gpu_defaults(GpuSpec *g)
{
    memset(g, 0, sizeof *g);
    snprintf(g->vendor, sizeof g->vendor, "nvidia");
    for (int d = 0; d < TS_DTYPE_COUNT; d++) g->gemm_eff[d] = 0.8;
    g->gemm_tile_m = 128;
    g->gemm_tile_n = 256;
    g->gemm_k_half = 128;
    g->grouped_gemm_eff = 1.0;
    g->simt_tile_m = 128;
    g->simt_tile_n = 128;
    g->simt_k_half = -1; /* < 0: derived in parse_gpu from peak and HBM */
    g->gemm_align_penalty = 0.7;
    g->gemm_align_penalty_2b = -1; /* < 0: gemm_align_penalty (parse_gpu) */
    g->gemm_align_elems = 64;
    g->attn_fwd_eff = 0.6;
    g->attn_bwd_eff = 0.5;
    g->attn_seq_half = 200;
    g->attn_hd64_factor = 0.8;
    g->attn_causal_half = 2.0;
    g->attn_causal_eff = 1.0;
    g->attn_fa2_factor[0] = g->attn_fa2_factor[1] = 1.0;
    g->attn_fa2_factor_hd64[0] = g->attn_fa2_factor_hd64[1] = -1; /* < 0: attn_fa2_factor (parse_gpu) */
    /* cuDNN 9.14 on an H200 and an H100 at 1980 MHz, six shapes each
     * (bench/data/gpu/sink_2026-11-27{i_h200,j_h100}.jsonl): 1.19-1.88 ns a
     * query row, median 1.61 (H200 1.54, H100 1.64); 1.74 at the presets'
     * 1830 MHz (the model's times are at the preset's clock); the other GPUs
     * assumed alike at theirs */
    g->attn_sink_bwd_row_s = GPU_SINK_BWD_ROW_NS * 1e-9;
    /* cuDNN attention (SDPA) on an H100 at 1980 MHz with and without dropout
     * 0.1 on the probabilities, six shapes (head dim 64 and 128, causal and
     * not, 256-2048 tokens; bench/data/gpu/dropout_2026-11-27_h100.jsonl):
     * the difference over the 128 x 128 score tiles the kernel walks is
     * 0.97-1.13 ps an element forward at the presets' 1830 MHz (median 1.02)
     * and 0.42-0.65 backward (median 0.53), the same at head dim 64 and 128:
     * the draws and the mask cost per score, not per FLOP. The other GPUs
     * assumed alike at their clock */
    g->attn_drop_elem_s[0] = GPU_ATTN_DROP_PS_FWD * 1e-12;
    g->attn_drop_elem_s[1] = GPU_ATTN_DROP_PS_BWD * 1e-12;
    /* torch.profiler of the 1 x 4096 GPT-OSS-20B 2-layer step
     * (bench/data/gpu/gptoss_hf_2026-11-27k_{h100,h200}.jsonl): the experts'
     * bias gradients, index_put_ of 16384 pairs into 32 expert rows (about
     * 567 on the busiest), take the bulk of indexing_backward_kernel's 4.98 /
     * 4.80 ms over 8 calls; the same on both GPUs whatever their HBM: 2.0 us
     * a duplicate, the other GPUs assumed alike */
    g->index_put_dup_s = GPU_INDEX_PUT_DUP_US * 1e-6;
    g->mem_eff = 0.85;
    g->mem_half_bytes = 3e6;
    g->launch_s = 3e-6;
    g->software = HW_SOFTWARE_2025;
}

/* Per-dtype object {"fp32": x, ...}; scale converts file units to SI. */
static TsStatus dtype_obj(const TsJsonDoc *doc, json_t *parent, const char *key, const char *path,
                          bool required, double lo, double hi, double scale, double *out,
                          TsError *err)
{
    json_t *o;
    TsStatus st = hw_json_obj(doc, parent, key, path, required, &o, err);
    if (st || !o) return st;
    if ((st = hw_check_keys(doc, o, path, DTYPE_KEYS, err))) return st;
    for (int d = 0; d < TS_DTYPE_COUNT; d++) {
        char p[128];
        double v = out[d] / scale;
        snprintf(p, sizeof p, "%s.%s", path, ts_dtype_name((TsDtype)d));
        if ((st = ts_json_num(doc, o, ts_dtype_name((TsDtype)d), p, false, lo, hi, &v, err))) return st;
        out[d] = v * scale;
    }
    return TS_OK;
}

static TsStatus num(const TsJsonDoc *doc, json_t *o, const char *key, const char *prefix,
                    bool req, double lo, double hi, double scale, double *out, TsError *err)
{
    char p[128];
    snprintf(p, sizeof p, "%s%s%s", prefix, prefix[0] ? "." : "", key);
    double v = *out / scale;
    TsStatus st = ts_json_num(doc, o, key, p, req, lo, hi, &v, err);
    if (!st) *out = v * scale;
    return st;
}

/* "key": [tile_m, tile_n], integers in 16..1024 (absent: keep *tm, *tn). */
static TsStatus tile_pair(const TsJsonDoc *doc, json_t *m, const char *key, const char *example, int64_t *tm,
                          int64_t *tn, TsError *err)
{
    json_t *tile = json_object_get(m, key);
    if (!tile) return TS_OK;
    if (!json_is_array(tile) || json_array_size(tile) != 2 || !json_is_integer(json_array_get(tile, 0)) ||
        !json_is_integer(json_array_get(tile, 1)) || json_integer_value(json_array_get(tile, 0)) < 16 ||
        json_integer_value(json_array_get(tile, 1)) < 16 || json_integer_value(json_array_get(tile, 0)) > 1024 ||
        json_integer_value(json_array_get(tile, 1)) > 1024) {
        char path[64], msg[128], hint[128];
        snprintf(path, sizeof path, "model.%s", key);
        snprintf(msg, sizeof msg, "'model.%s' must be [tile_m, tile_n], integers in 16..1024", key);
        snprintf(hint, sizeof hint, "the output tile of the %s kernel, e.g. %s",
                 key[0] == 's' ? "FP32 CUDA-core GEMM" : "large-GEMM", example);
        return hw_err_path(doc, path, err, msg, hint);
    }
    *tm = (int64_t)json_integer_value(json_array_get(tile, 0));
    *tn = (int64_t)json_integer_value(json_array_get(tile, 1));
    return TS_OK;
}

/* "key": [forward, backward], numbers in lo..hi (absent: keep out[]). */
static TsStatus pair(const TsJsonDoc *doc, json_t *m, const char *prefix, const char *key, double lo, double hi,
                     const char *hint, double out[2], TsError *err)
{
    json_t *a = json_object_get(m, key);
    if (!a) return TS_OK;
    double v[2] = {0, 0};
    bool ok = json_is_array(a) && json_array_size(a) == 2;
    for (int i = 0; ok && i < 2; i++) {
        json_t *x = json_array_get(a, (size_t)i);
        ok = json_is_number(x) && (v[i] = json_number_value(x)) >= lo && v[i] <= hi;
    }
    if (!ok) {
        char path[96], msg[192];
        snprintf(path, sizeof path, "%s.%s", prefix, key);
        snprintf(msg, sizeof msg, "'%s' must be [forward, backward], numbers in %g..%g", path, lo, hi);
        return hw_err_path(doc, path, err, msg, hint);
    }
    out[0] = v[0], out[1] = v[1];
    return TS_OK;
}

#define PAIR_FACTORS "time factors of the two passes, e.g. [1.9, 1.85]"

/* model.eager_norm {eff, row_ns: [forward, backward]}, optional. */
static TsStatus parse_eager_norm(const TsJsonDoc *doc, json_t *m, GpuSpec *g, TsError *err)
{
    json_t *o;
    TsStatus st;
    if ((st = hw_json_obj(doc, m, "eager_norm", "model.eager_norm", false, &o, err)) || !o) return st;
    double ns[2] = {0, 0};
    if ((st = hw_check_keys(doc, o, "model.eager_norm", NORM_KEYS, err)) ||
        (st = num(doc, o, "eff", "model.eager_norm", true, 0.05, 1, 1, &g->eager_norm_eff, err)) ||
        (st = pair(doc, o, "model.eager_norm", "row_ns", 0, 1e6, PAIR_FACTORS, ns, err))) {
        ts_err_hint(err, "PyTorch's norm kernels, e.g. {\"eff\": 0.69, \"row_ns\": [2.35, 6.6]} (share of the "
                         "streaming bandwidth; ns a row forward, backward)");
        return st;
    }
    g->eager_norm_row_s[0] = ns[0] * 1e-9, g->eager_norm_row_s[1] = ns[1] * 1e-9;
    return TS_OK;
}

static TsStatus parse_model(const TsJsonDoc *doc, json_t *m, GpuSpec *g, TsError *err)
{
    TsStatus st;
    if ((st = hw_check_keys(doc, m, "model", MODEL_KEYS, err))) return st;
    if ((st = dtype_obj(doc, m, "gemm_eff", "model.gemm_eff", false, 0.01, 1.0, 1.0, g->gemm_eff, err)))
        return st;
    if ((st = tile_pair(doc, m, "gemm_tile", "[128, 256]", &g->gemm_tile_m, &g->gemm_tile_n, err))) return st;
    if ((st = tile_pair(doc, m, "simt_tile", "[128, 128]", &g->simt_tile_m, &g->simt_tile_n, err))) return st;
    if ((st = num(doc, m, "gemm_k_half", "model", false, 0, 1e5, 1, &g->gemm_k_half, err))) return st;
    if ((st = num(doc, m, "grouped_gemm_eff", "model", false, 0.05, 1, 1, &g->grouped_gemm_eff, err))) return st;
    if ((st = num(doc, m, "simt_k_half", "model", false, 0, 1e5, 1, &g->simt_k_half, err))) return st;
    if ((st = num(doc, m, "gemm_align_penalty", "model", false, 0.05, 1, 1, &g->gemm_align_penalty, err)))
        return st;
    if ((st = num(doc, m, "gemm_align_penalty_2b", "model", false, 0.02, 1, 1, &g->gemm_align_penalty_2b, err)))
        return st;
    if ((st = ts_json_int(doc, m, "gemm_align_elems", "model.gemm_align_elems", false, 1, 4096,
                          &g->gemm_align_elems, err)))
        return st;
    if ((st = num(doc, m, "attn_fwd_eff", "model", false, 0.01, 1, 1, &g->attn_fwd_eff, err))) return st;
    if ((st = num(doc, m, "attn_bwd_eff", "model", false, 0.01, 1, 1, &g->attn_bwd_eff, err))) return st;
    if ((st = num(doc, m, "attn_seq_half", "model", false, 0, 1e6, 1, &g->attn_seq_half, err))) return st;
    if ((st = num(doc, m, "attn_hd64_factor", "model", false, 0.05, 2, 1, &g->attn_hd64_factor, err)))
        return st;
    if ((st = num(doc, m, "attn_causal_half", "model", false, 0.1, 100, 1, &g->attn_causal_half, err))) return st;
    if ((st = num(doc, m, "attn_causal_eff", "model", false, 0.05, 2, 1, &g->attn_causal_eff, err))) return st;
    if ((st = pair(doc, m, "model", "attn_fa2_factor", 1, 10, PAIR_FACTORS, g->attn_fa2_factor, err))) return st;
    if ((st = pair(doc, m, "model", "attn_fa2_factor_hd64", 1, 10, PAIR_FACTORS, g->attn_fa2_factor_hd64, err)))
        return st;
    double drop[2] = {g->attn_drop_elem_s[0] * 1e12, g->attn_drop_elem_s[1] * 1e12};
    if ((st = pair(doc, m, "model", "attn_dropout_ps_per_elem", 0, 1000,
                   "ps a score element that dropout adds to the fused attention, e.g. [1.02, 0.53] (H100); leave "
                   "it out when unknown",
                   drop, err)))
        return st;
    g->attn_drop_elem_s[0] = drop[0] * 1e-12, g->attn_drop_elem_s[1] = drop[1] * 1e-12;
    if ((st = num(doc, m, "attn_sink_bwd_ns_per_row", "model", false, 0, 1000, 1e-9, &g->attn_sink_bwd_row_s, err))) {
        ts_err_hint(err, "ns a query row that a learned attention sink adds to the fused attention's backward, e.g. "
                         "1.74 (H100, H200); leave it out when unknown");
        return st;
    }
    if ((st = num(doc, m, "index_put_dup_us", "model", false, 0, 1000, 1e-6, &g->index_put_dup_s, err))) {
        ts_err_hint(err, "microseconds each duplicate index adds to PyTorch's sort-based index_put_ with "
                         "accumulate, e.g. 2.0 (H100, H200); leave it out when unknown");
        return st;
    }
    if ((st = num(doc, m, "calib_reference_us", "model", false, 1, 1e6, 1e-6, &g->calib_ref_s, err))) {
        ts_err_hint(err, "microseconds of tools/calibrate's reference GEMM (bf16 4096^3, 5 s back to back) on "
                         "units of this GPU, e.g. 201.1 (H100); leave it out when unknown");
        return st;
    }
    if ((st = num(doc, m, "mem_eff", "model", false, 0.01, 1, 1, &g->mem_eff, err))) return st;
    if ((st = num(doc, m, "mem_half_mb", "model", false, 0, 1e4, 1e6, &g->mem_half_bytes, err))) return st;
    if ((st = num(doc, m, "launch_us", "model", false, 0, 1e4, 1e-6, &g->launch_s, err))) return st;
    if ((st = num(doc, m, "eager_generic_gelem_per_ms", "model", false, 0.001, 1000, 1,
                  &g->eager_generic_gelem_per_ms, err))) {
        ts_err_hint(err, "G elements per ms of PyTorch's generic elementwise kernel, e.g. 0.34 (H100); "
                         "leave it out when unknown");
        return st;
    }
    if ((st = parse_eager_norm(doc, m, g, err))) return st;
    json_t *sw;
    if ((st = hw_json_obj(doc, m, "software_2024", "model.software_2024", false, &sw, err))) return st;
    if (sw) {
        if ((st = hw_check_keys(doc, sw, "model.software_2024", SW2024_KEYS, err))) return st;
        if ((st = num(doc, sw, "gemm_eff_fp8", "model.software_2024", false, 0.01, 1, 1, &g->sw2024_fp8_eff, err)) ||
            (st = pair(doc, sw, "model.software_2024", "attn_factor", 0.05, 2, PAIR_FACTORS, g->sw2024_attn_factor,
                       err))) {
            ts_err_hint(err, "the 2024 libraries' figures where they differ, e.g. {\"gemm_eff_fp8\": 0.68, "
                             "\"attn_factor\": [0.96, 0.89]} (attention forward, backward)");
            return st;
        }
    }
    json_t *notes = json_object_get(m, "notes");
    if (notes && !json_is_string(notes) && !json_is_object(notes))
        return hw_err_path(doc, "model.notes", err, "'model.notes' must be a string or an object",
                           "free-text reasoning for the parameters");
    return TS_OK;
}

static TsStatus parse_gpu(const TsJsonDoc *doc, GpuSpec *g, TsError *err)
{
    json_t *r = doc->root;
    TsStatus st;
    /* the format first: another trainsim file is named as such, not by its fields */
    if ((st = hw_check_format(doc, "trainsim-gpu", err))) return st;
    if ((st = hw_check_keys(doc, r, "", GPU_KEYS, err))) return st;
    if ((st = ts_json_str(doc, r, "name", "name", true, g->name, sizeof g->name, err))) return st;
    if ((st = ts_json_str(doc, r, "source", "source", true, g->source, sizeof g->source, err))) return st;
    if ((st = ts_json_str(doc, r, "vendor", "vendor", false, g->vendor, sizeof g->vendor, err))) return st;
    if ((st = ts_json_str(doc, r, "arch", "arch", false, g->arch, sizeof g->arch, err))) return st;
    if ((st = dtype_obj(doc, r, "peak_tflops", "peak_tflops", true, 0, 1e6, 1e12, g->peak_flops, err)))
        return st;
    bool any = false;
    for (int d = 0; d < TS_DTYPE_COUNT; d++) any = any || g->peak_flops[d] > 0;
    if (!any)
        return hw_err_path(doc, "peak_tflops", err, "'peak_tflops' gives no positive peak",
                           "dense TFLOP/s per dtype, e.g. {\"bf16\": 989.4, \"fp32\": 66.9}");
    if ((st = num(doc, r, "hbm_tb_per_s", "", true, 1e-3, 1e3, 1e12, &g->hbm_bw_bytes_per_s, err))) return st;
    /* Memory capacity as the datasheet prints it: "80 GB" of HBM is 80 GiB
     * (5 stacks x 16 GiB), so hbm_gb is read in units of 2^30 bytes
     * (docs/memory.md, "GPU capacity"). */
    if ((st = num(doc, r, "hbm_gb", "", true, 0.1, 1e5, HW_CAPACITY_GB_BYTES, &g->hbm_bytes, err))) return st;
    if ((st = ts_json_int(doc, r, "sm_count", "sm_count", true, 1, 100000, &g->sm_count, err))) return st;
    if ((st = num(doc, r, "l2_mb", "", false, 0, 1e5, 1e6, &g->l2_bytes, err))) return st;
    if ((st = num(doc, r, "power_w", "", false, 0, 1e5, 1, &g->power_w, err))) return st;
    if ((st = num(doc, r, "clock_mhz", "", false, 0, 1e5, 1, &g->clock_mhz, err))) return st;
    if ((st = num(doc, r, "sustained_clock_mhz", "", false, 0, 1e5, 1, &g->sustained_clock_mhz, err))) return st;
    if ((st = num(doc, r, "single_clock_mhz", "", false, 0, 1e5, 1, &g->single_clock_mhz, err))) return st;
    if ((st = num(doc, r, "scaleup_gb_per_s", "", false, 0, 1e5, 1e9, &g->scaleup_bw_bytes_per_s, err)))
        return st;
    json_t *m;
    if ((st = hw_json_obj(doc, r, "model", "model", false, &m, err))) return st;
    if (m && (st = parse_model(doc, m, g, err))) return st;
    /* SIMT main-loop ramp when the file leaves it out: the FP32 machine balance
     * (FLOP per HBM byte). The K at which a CTA's main loop costs as much as
     * writing its fp32 C tile through its SM's share of HBM (2 peak/bw K-steps)
     * with half of that hidden by the co-resident CTA (docs/hardware.md). */
    if (g->simt_k_half < 0) g->simt_k_half = g->peak_flops[TS_DTYPE_FP32] / g->hbm_bw_bytes_per_s;
    if (g->gemm_align_penalty_2b < 0) g->gemm_align_penalty_2b = g->gemm_align_penalty;
    for (int i = 0; i < 2; i++)
        if (g->attn_fa2_factor_hd64[i] < 0) g->attn_fa2_factor_hd64[i] = g->attn_fa2_factor[i];
    return TS_OK;
}

TsStatus hw_gpu_load(const char *name_or_path, GpuSpec *out, TsError *err)
{
    char path[1200];
    TsStatus st = hw_resolve("gpus", "GPU", name_or_path, path, sizeof path, err);
    if (st) return st;
    TsJsonDoc doc;
    st = ts_json_load(&doc, path, err);
    if (st) {
        ts_json_free(&doc);
        return st;
    }
    GpuSpec g;
    gpu_defaults(&g);
    st = parse_gpu(&doc, &g, err);
    ts_json_free(&doc);
    if (!st) *out = g;
    return st;
}

int hw_gpu_names(char names[][64], int cap) { return hw_list_names("gpus", names, cap); }

static void kv_num(TsBuf *b, const char *ind, const char *k, double v, bool comma)
{
    ts_buf_printf(b, "%s\"%s\": ", ind, k);
    ts_json_fmt_double(b, v);
    ts_buf_puts(b, comma ? ",\n" : "\n");
}

static void kv_str(TsBuf *b, const char *ind, const char *k, const char *v)
{
    ts_buf_printf(b, "%s\"%s\": ", ind, k);
    ts_json_escape(b, v);
    ts_buf_puts(b, ",\n");
}

static void dtype_map(TsBuf *b, const char *ind, const char *k, const double *v, double scale)
{
    ts_buf_printf(b, "%s\"%s\": {", ind, k);
    for (int d = 0; d < TS_DTYPE_COUNT; d++) {
        ts_buf_printf(b, "%s\"%s\": ", d ? ", " : "", ts_dtype_name((TsDtype)d));
        ts_json_fmt_double(b, v[d] / scale);
    }
    ts_buf_puts(b, "},\n");
}

void hw_gpu_to_json(const GpuSpec *g, TsBuf *b)
{
    ts_buf_puts(b, "{\n  \"format\": \"trainsim-gpu\",\n  \"version\": 1,\n");
    kv_str(b, "  ", "name", g->name);
    kv_str(b, "  ", "source", g->source);
    kv_str(b, "  ", "vendor", g->vendor);
    kv_str(b, "  ", "arch", g->arch);
    dtype_map(b, "  ", "peak_tflops", g->peak_flops, 1e12);
    kv_num(b, "  ", "hbm_tb_per_s", g->hbm_bw_bytes_per_s / 1e12, true);
    kv_num(b, "  ", "hbm_gb", g->hbm_bytes / HW_CAPACITY_GB_BYTES, true);
    kv_num(b, "  ", "sm_count", (double)g->sm_count, true);
    kv_num(b, "  ", "l2_mb", g->l2_bytes / 1e6, true);
    kv_num(b, "  ", "power_w", g->power_w, true);
    kv_num(b, "  ", "clock_mhz", g->clock_mhz, true);
    if (g->sustained_clock_mhz > 0) kv_num(b, "  ", "sustained_clock_mhz", g->sustained_clock_mhz, true);
    if (g->single_clock_mhz > 0) kv_num(b, "  ", "single_clock_mhz", g->single_clock_mhz, true);
    kv_num(b, "  ", "scaleup_gb_per_s", g->scaleup_bw_bytes_per_s / 1e9, true);
    ts_buf_puts(b, "  \"model\": {\n");
    dtype_map(b, "    ", "gemm_eff", g->gemm_eff, 1.0);
    ts_buf_printf(b, "    \"gemm_tile\": [%lld, %lld],\n", (long long)g->gemm_tile_m,
                  (long long)g->gemm_tile_n);
    kv_num(b, "    ", "gemm_k_half", g->gemm_k_half, true);
    if (g->grouped_gemm_eff != 1.0) kv_num(b, "    ", "grouped_gemm_eff", g->grouped_gemm_eff, true);
    ts_buf_printf(b, "    \"simt_tile\": [%lld, %lld],\n", (long long)g->simt_tile_m,
                  (long long)g->simt_tile_n);
    kv_num(b, "    ", "simt_k_half", g->simt_k_half, true);
    kv_num(b, "    ", "gemm_align_penalty", g->gemm_align_penalty, true);
    if (g->gemm_align_penalty_2b != g->gemm_align_penalty)
        kv_num(b, "    ", "gemm_align_penalty_2b", g->gemm_align_penalty_2b, true);
    kv_num(b, "    ", "gemm_align_elems", (double)g->gemm_align_elems, true);
    kv_num(b, "    ", "attn_fwd_eff", g->attn_fwd_eff, true);
    kv_num(b, "    ", "attn_bwd_eff", g->attn_bwd_eff, true);
    kv_num(b, "    ", "attn_seq_half", g->attn_seq_half, true);
    kv_num(b, "    ", "attn_hd64_factor", g->attn_hd64_factor, true);
    kv_num(b, "    ", "attn_causal_half", g->attn_causal_half, true);
    kv_num(b, "    ", "attn_causal_eff", g->attn_causal_eff, true);
    if (g->attn_fa2_factor[0] != 1.0 || g->attn_fa2_factor[1] != 1.0)
        ts_buf_printf(b, "    \"attn_fa2_factor\": [%.17g, %.17g],\n", g->attn_fa2_factor[0],
                      g->attn_fa2_factor[1]);
    if (g->attn_fa2_factor_hd64[0] != g->attn_fa2_factor[0] || g->attn_fa2_factor_hd64[1] != g->attn_fa2_factor[1])
        ts_buf_printf(b, "    \"attn_fa2_factor_hd64\": [%.17g, %.17g],\n", g->attn_fa2_factor_hd64[0],
                      g->attn_fa2_factor_hd64[1]);
    if (fabs(g->attn_sink_bwd_row_s * 1e9 - GPU_SINK_BWD_ROW_NS) > 1e-9) /* the default, however parsed */
        kv_num(b, "    ", "attn_sink_bwd_ns_per_row", g->attn_sink_bwd_row_s * 1e9, true);
    if (fabs(g->attn_drop_elem_s[0] * 1e12 - GPU_ATTN_DROP_PS_FWD) > 1e-9 ||
        fabs(g->attn_drop_elem_s[1] * 1e12 - GPU_ATTN_DROP_PS_BWD) > 1e-9) /* the default, however parsed */
        ts_buf_printf(b, "    \"attn_dropout_ps_per_elem\": [%.17g, %.17g],\n", g->attn_drop_elem_s[0] * 1e12,
                      g->attn_drop_elem_s[1] * 1e12);
    if (fabs(g->index_put_dup_s * 1e6 - GPU_INDEX_PUT_DUP_US) > 1e-9) /* the default, however parsed */
        kv_num(b, "    ", "index_put_dup_us", g->index_put_dup_s * 1e6, true);
    if (g->calib_ref_s > 0) kv_num(b, "    ", "calib_reference_us", g->calib_ref_s * 1e6, true);
    kv_num(b, "    ", "mem_eff", g->mem_eff, true);
    kv_num(b, "    ", "mem_half_mb", g->mem_half_bytes / 1e6, true);
    /* (a spec already on the 2024 libraries carries them in its figures) */
    bool sw = g->software != HW_SOFTWARE_2024 && hw_gpu_has_2024(g);
    bool nrm = g->eager_norm_eff > 0;
    kv_num(b, "    ", "launch_us", g->launch_s * 1e6, g->eager_generic_gelem_per_ms > 0 || nrm || sw);
    if (g->eager_generic_gelem_per_ms > 0)
        kv_num(b, "    ", "eager_generic_gelem_per_ms", g->eager_generic_gelem_per_ms, nrm || sw);
    if (nrm)
        ts_buf_printf(b, "    \"eager_norm\": {\"eff\": %.17g, \"row_ns\": [%.10g, %.10g]}%s\n", g->eager_norm_eff,
                      g->eager_norm_row_s[0] * 1e9, g->eager_norm_row_s[1] * 1e9, sw ? "," : "");
    if (sw) {
        ts_buf_puts(b, "    \"software_2024\": {\n");
        if (g->sw2024_fp8_eff > 0) kv_num(b, "      ", "gemm_eff_fp8", g->sw2024_fp8_eff, g->sw2024_attn_factor[0] > 0);
        if (g->sw2024_attn_factor[0] > 0)
            ts_buf_printf(b, "      \"attn_factor\": [%.17g, %.17g]\n", g->sw2024_attn_factor[0],
                          g->sw2024_attn_factor[1]);
        ts_buf_puts(b, "    }\n");
    }
    ts_buf_puts(b, "  }\n}\n");
}

bool hw_software_parse(const char *s, HwSoftware *out)
{
    if (!strcmp(s, "2024")) *out = HW_SOFTWARE_2024;
    else if (!strcmp(s, "2025")) *out = HW_SOFTWARE_2025;
    else return false;
    return true;
}

void hw_gpu_software(GpuSpec *g, HwSoftware sw)
{
    if (sw != HW_SOFTWARE_2024 || g->software == HW_SOFTWARE_2024) return;
    if (g->sw2024_fp8_eff > 0) g->gemm_eff[TS_DTYPE_FP8] = g->sw2024_fp8_eff;
    if (g->sw2024_attn_factor[0] > 0) {
        g->attn_fwd_eff *= g->sw2024_attn_factor[0];
        g->attn_bwd_eff *= g->sw2024_attn_factor[1];
    }
    g->software = HW_SOFTWARE_2024;
}

bool hw_gpu_has_2024(const GpuSpec *g) { return g->sw2024_fp8_eff > 0 || g->sw2024_attn_factor[0] > 0; }

double hw_sustained_clock_mhz(const GpuSpec *g)
{
    return g->sustained_clock_mhz > 0 ? g->sustained_clock_mhz : g->clock_mhz;
}

const char *hw_software_suffix(const GpuSpec *g)
{
    return g->software == HW_SOFTWARE_2024 ? ", 2024 CUDA libraries" : "";
}
