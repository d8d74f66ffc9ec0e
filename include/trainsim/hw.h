/*
 * trainsim/hw.h — hardware: GPUs, clusters, and what a kernel or a
 * collective costs on them.
 *
 * What it models
 *   - GpuSpec: one accelerator (datasheet peaks, HBM, SMs, L2, power) plus
 *     the parameters of the compute-time model, all read from
 *     data/gpus/<name>.json (each with a `source`; see docs/hardware.md).
 *   - ClusterSpec: a node type (GPUs per scale-up domain, scale-up and NIC
 *     bandwidth/latency per direction, NVLS/SHARP, oversubscription) from
 *     data/clusters/<name>.json, sized to `gpus` (nodes = ceil(gpus/per node)).
 *   - Compute time (HwModel): GEMMs with tile and wave quantization and a
 *     per-dtype efficiency curve (NeuSight-style; FP32 without TF32 runs on
 *     the CUDA cores: SIMT tiles, its own ramp, no tensor-core alignment
 *     rules; TF32 and narrower on tensor cores), a FlashAttention-style
 *     attention core (causal aware, own backward efficiency), memory-bound
 *     ops as bytes / effective HBM bandwidth with a small-tensor floor, and a
 *     per-kernel launch overhead. An optional calibration table (measured
 *     kernel times) overrides the model where it has data (interpolated).
 *   - Communication time (HwNet): NCCL-style ring / tree / NVLS costs per
 *     collective with LL / LL128 / Simple protocols, the fastest chosen per
 *     size as NCCL's tuner does; hierarchical for groups spanning nodes. An
 *     optional measured bus-bandwidth table (--busbw, SimAI busbw.yaml or
 *     JSON) overrides it.
 *
 * Units: seconds, bytes, FLOP, FLOP/s, bytes/s (per direction unless said).
 * Collective sizes are the whole buffer (nccl-tests / SimAI convention).
 * Invariants: every time returned is finite and >= 0; zero work costs 0 s
 * (no launch) so callers may cost empty shards freely. Model functions are
 * pure and allocation-free (tens of ns per call).
 *
 * Example:
 *     HwModel m; TsError err = {0};
 *     hw_model_init(&m);
 *     hw_gpu_load("h100-sxm5-80gb", &m.gpu, &err);
 *     double t = hw_gemm_time_s(&m, 1, 4096, 4096, 4096, TS_DTYPE_BF16);
 *     // 2*4096^3 / t ~= 780e12 FLOP/s
 *     ClusterSpec c; hw_cluster_load("dgx-h100", 64, &c, &err);   // 8 nodes
 *     HwNet net; hw_net_init(&net, &c);
 *     double ar = hw_coll_time_s(&net, TS_COLL_ALLREDUCE, 1 << 30, 8, 1, 1, HW_GROUP_TP);
 */
#ifndef TRAINSIM_HW_H
#define TRAINSIM_HW_H

#include "trainsim/common.h"
#include "trainsim/graph.h"

/* ---- GPUs -------------------------------------------------------------------- */
/* Bytes in one datasheet "GB" of memory CAPACITY: GPU vendors count memory in
 * binary units (H100 "80 GB" = 5 HBM3 stacks x 16 GiB; nvidia-smi shows 81559
 * MiB of it to CUDA). Bandwidths (TB/s, GB/s) stay decimal. */
#define HW_CAPACITY_GB_BYTES 1073741824.0
typedef struct GpuSpec {
    char name[64];                        /* "h100-sxm5-80gb" */
    char source[1024];                    /* datasheet / microbenchmark citations */
    char vendor[16];                      /* "nvidia", "amd" */
    char arch[16];                        /* "ampere", "hopper", "blackwell", "ada", "cdna3" */
    double peak_flops[TS_DTYPE_COUNT];    /* dense tensor FLOP/s per dtype; 0 = unsupported (A100 fp8) */
    double hbm_bw_bytes_per_s;            /* spec HBM bandwidth, 3.35e12 */
    double hbm_bytes;                     /* memory capacity: the datasheet's "GB" x 2^30,
                                             80 GiB = 85899345920 (docs/memory.md) */
    int64_t sm_count;                     /* SMs (CUs on AMD), 132 */
    double l2_bytes;                      /* L2 cache, 50e6 */
    double power_w;                       /* TDP, 700 */
    double clock_mhz;                     /* clock the peak FLOPs assume, 1830 */
    double sustained_clock_mhz;           /* SM clock under sustained full-node training load
                                             (power/thermal cap), 1650; 0 = clock_mhz. The
                                             kernel models reproduce microbenchmarks; the
                                             simulator scales tensor-core kernels by
                                             clock_mhz / sustained_clock_mhz */
    double single_clock_mhz;              /* SM clock of one GPU running a training step's mix
                                             alone (a job of one GPU: seconds of a layer's
                                             GEMMs, attention and memory-bound kernels, the
                                             node's other GPUs idle), 1627.5 (H200); 0 =
                                             sustained_clock_mhz */
    double scaleup_bw_bytes_per_s;        /* NVLink/xGMI per GPU per direction, 450e9; 0 = none */
    /* ---- compute-model parameters (docs/hardware.md says where each comes from) */
    double gemm_eff[TS_DTYPE_COUNT];      /* fraction of peak a large, aligned, full-wave GEMM
                                             reaches (MAMF / peak), 0.80; fp32 = the SIMT
                                             (CUDA-core) kernel's fraction of the FP32 peak */
    int64_t gemm_tile_m, gemm_tile_n;     /* output tile of the large-GEMM kernel, 128 x 256 */
    double grouped_gemm_eff;              /* a grouped GEMM kernel's (torch._grouped_mm) asymptote
                                             over the dense one's, 1 */
    double gemm_k_half;                   /* K at which the main-loop efficiency is 1/2:
                                             eff_k = K / (K + k_half), 256 */
    int64_t simt_tile_m, simt_tile_n;     /* output tile of the FP32 (no TF32) CUDA-core GEMM
                                             kernel, cuBLAS sgemm 128 x 128 */
    double simt_k_half;                   /* its main-loop ramp K/(K + k_half); default the FP32
                                             machine balance peak_fp32 / HBM B/s, 12.5 on A100 */
    double gemm_align_penalty;            /* efficiency factor per GEMM dim (N, K) whose rows are
                                             4- or 8-byte aligned but not 16 (no TMA / vector
                                             loads), 0.70; Hopper 0.36 measured */
    double gemm_align_penalty_2b;         /* the same for a dim aligned to 2 bytes or less (an
                                             odd 16-bit dim: GPT-2's 50257-word head), default
                                             gemm_align_penalty; Hopper 0.18 measured */
    int64_t gemm_align_elems;             /* 64 (128 B at 16 bit) */
    double attn_fwd_eff;                  /* FA fwd TFLOP/s / peak at long seq, hd128, 0.65 */
    double attn_bwd_eff;                  /* FA bwd (2.5x fwd FLOPs) TFLOP/s / peak, long seq, 0.57 */
    double attn_seq_half;                 /* sequence at which attention efficiency is 1/2 of
                                             its asymptote (per-CTA tail/latency), 300 */
    double attn_hd64_factor;              /* efficiency multiplier at head dim 64 vs 128, 0.77 */
    double attn_causal_half;              /* causal (square) attention: half-point multiplier, 2
                                             (half the work per row saturates later) */
    double attn_causal_eff;               /* causal: asymptote multiplier, 1 (diagonal tiles and
                                             uneven rows: FA2 on A100 0.94, cuDNN on H100 0.91) */
    double attn_fa2_factor[2];            /* time factor forward / backward of SDPA's flash kernel
                                             (FlashAttention-2) over the fused attention this
                                             model describes, for measurements and calibrations
                                             timed on it, at head dim 128 and above; 1 where that
                                             kernel is FA2 (A100) */
    double attn_fa2_factor_hd64[2];       /* the same at head dim 64 and below, linear between
                                             (hw_attn_fa2_factor); absent: attn_fa2_factor */
    double attn_sink_bwd_row_s;           /* fused attention with a learned sink per head (GPT-OSS):
                                             the backward's extra time per query row (batch x
                                             heads x tokens), whatever the head dim and window,
                                             at the preset's clock; 1.74e-9 (cuDNN, H100, H200) */
    double attn_drop_elem_s[2];           /* dropout on the probabilities inside the fused
                                             attention: forward / backward time per score element
                                             of the tiles the kernel walks (its Philox draws and
                                             mask), whatever the head dim, at the preset's clock;
                                             1.02e-12 / 0.53e-12 (cuDNN, H100) */
    double index_put_dup_s;               /* PyTorch's sort-based index_put_ with accumulate (the
                                             backward of an index, torch 2.11): one warp walks
                                             every duplicate of a destination row in turn, each
                                             a dependent read-add-write; the time per duplicate
                                             of the busiest row, 2.0e-6 (H100, H200) */
    double calib_ref_s;                   /* the calibrator's reference GEMM (bf16 4096^3, NN, 5 s
                                             back to back, tools/calibrate) on the units this
                                             preset was measured on, 201.1e-6 (H100); a version 3
                                             calibration is read relative to it; 0 = unknown */
    double mem_eff;                       /* achieved / spec HBM bandwidth for large streams, 0.88 */
    double mem_half_bytes;                /* bytes at which achieved bandwidth is half of it, 4e6 */
    double launch_s;                      /* per-kernel launch + tail overhead, 4e-6 */
    double eager_generic_gelem_per_ms;    /* elements per ms of PyTorch's generic (non-vectorized)
                                             elementwise kernel, which a broadcast operand or a
                                             row mask sends ops to: bound by the SMs' index
                                             arithmetic, not HBM; 0 = unknown (streamed bytes) */
    double eager_norm_eff;                /* PyTorch's fused norm kernels (LayerNorm, rms_norm:
                                             a block reduces each row): their share of the
                                             streaming bandwidth, 0.69 (H100); 0 = unknown (1) */
    double eager_norm_row_s[2];           /* and their time per row forward / backward, the
                                             floor at narrow rows (a row's reduction and
                                             synchronisation), 2.35e-9 / 6.6e-9 (H100) */
    /* The 2024 libraries (CUDA 12.4-12.6: cuBLAS before 12.9, cuDNN 9.2), where
     * they ran slower than the current ones the fields above describe; 0 = the
     * same. hw_gpu_software applies them. */
    double sw2024_fp8_eff;                /* gemm_eff[fp8] under them, 0.68 (H100) */
    double sw2024_attn_factor[2];         /* attention efficiency multipliers forward / backward,
                                             0.96 / 0.89 (H100) */
    int software;                         /* the libraries applied: 2025 (the fields as
                                             loaded, the default) or 2024 */
} GpuSpec;

/* Load a preset name ("h100-sxm5-80gb", resolved in <data>/gpus/) or a JSON
 * file path. Unknown names: TS_ERR_INPUT listing the presets; malformed
 * files: TS_ERR_INPUT positioned at the value. *out is fully written on
 * success only. */
TsStatus hw_gpu_load(const char *name_or_path, GpuSpec *out, TsError *err);
/* Preset names, sorted; returns the count (may exceed cap; only cap filled). */
int hw_gpu_names(char names[][64], int cap);
/* JSON text of a spec (the preset format). */
void hw_gpu_to_json(const GpuSpec *g, TsBuf *out);

/* The generation of the CUDA libraries a run uses. 2025 (default): cuBLAS
 * 12.9 and later, cuDNN 9.10 and later, what the presets describe; 2024:
 * CUDA 12.4-12.6 (NeMo 24.x containers), whose Hopper FP8 GEMMs and cuDNN
 * attention were slower (docs/hardware.md, "Library generation"). */
typedef enum { HW_SOFTWARE_2025 = 2025, HW_SOFTWARE_2024 = 2024 } HwSoftware;
/* "2024" / "2025" -> *out; false for anything else. */
bool hw_software_parse(const char *s, HwSoftware *out);
/* Put g's compute parameters on the libraries of `sw`: 2024 replaces the FP8
 * GEMM efficiency and scales the attention efficiencies by the preset's 2024
 * figures where it has them. A spec already on the 2024 libraries stays
 * there; 2025 leaves a spec as loaded. */
void hw_gpu_software(GpuSpec *g, HwSoftware sw);
/* Does g's preset carry 2024 figures (model.software_2024)? */
bool hw_gpu_has_2024(const GpuSpec *g);
/* The GPU's SM clock under sustained full-node load: sustained_clock_mhz,
 * else clock_mhz (0 for a GPU file without clocks). */
double hw_sustained_clock_mhz(const GpuSpec *g);
/* ", 2024 CUDA libraries" for a spec on them, else "": the suffix the
 * reports put after the GPU's name. */
const char *hw_software_suffix(const GpuSpec *g);

/* ---- clusters ------------------------------------------------------------------- */
/* What carries GPU-to-GPU traffic inside a node (a cluster's scaleup.link):
 * over PCIe NCCL runs no LL128 and the pipeline fill is a time (hw/net.c). */
typedef enum { HW_LINK_NVLINK, HW_LINK_XGMI, HW_LINK_PCIE, HW_LINK_COUNT } HwLink;
const char *hw_link_name(HwLink l);    /* "nvlink", "xgmi", "pcie": the file's spelling */
const char *hw_link_display(HwLink l); /* "NVLink", "xGMI", "PCIe" */

typedef struct ClusterSpec {
    char name[64];                        /* "dgx-h100" */
    char source[1024];
    char gpu_name[64];                    /* GPU preset (or path) named by the file */
    GpuSpec gpu;                          /* loaded from gpu_name */
    int64_t gpus;                         /* GPUs in the job, 64 */
    int64_t nodes;                        /* ceil(gpus / gpus_per_node), 8 */
    int64_t gpus_per_node;                /* scale-up domain size, 8 (72 for NVL72) */
    double scaleup_bw_bytes_per_s;        /* per GPU per direction, 450e9 */
    double scaleup_lat_s;                 /* per hop, 0.6e-6 (NCCL NVLink LL hwLat) */
    double scaleup_eff;                   /* achieved / line rate for ring traffic, 0.82 */
    HwLink scaleup_link;                  /* scaleup.link: nvlink (default), xgmi, pcie */
    int64_t nics_per_node;                /* 8 */
    double nic_bw_bytes_per_s;            /* per NIC per direction, 50e9 (NDR 400 Gb/s) */
    double nic_lat_s;                     /* per hop, 2.7e-6 (NCCL NET ring LL hwLat) */
    double nic_eff;                       /* achieved / line rate, 0.94 (46-48 of 50 GB/s) */
    bool nvls;                            /* NVLink SHARP in the switch (Hopper+ NVSwitch) */
    double nvls_eff;                      /* NCCL nvlsEfficiency, 0.85 Hopper */
    bool sharp;                           /* in-network reduction in the scale-out fabric */
    double oversubscription;              /* bandwidth ratio above the leaf, 1 = non-blocking */
    int64_t nodes_per_leaf;               /* nodes under one leaf (rail) switch, 32 */
    char gen[16];                         /* "ampere","hopper","blackwell","cdna3": NCCL caps */
} ClusterSpec;

/* Load a preset or file and size it to `gpus` (>= 1). Also loads the GPU. */
TsStatus hw_cluster_load(const char *name_or_path, int64_t gpus, ClusterSpec *out, TsError *err);
int hw_cluster_names(char names[][64], int cap);
void hw_cluster_to_json(const ClusterSpec *c, TsBuf *out);

/* ---- calibration tables ----------------------------------------------------------- */
/* Measured kernel times (format "trainsim-calibration" version 3, versions 1
 * and 2 still read; docs/hardware.md), written by tools/calibrate and
 * tools/measure/measure.py. Opaque, heap-owned; free with hw_calib_free.
 * Load errors: TS_ERR_INPUT positioned at the value, *out NULL. */
typedef struct HwCalib HwCalib;
TsStatus hw_calib_load(const char *path, HwCalib **out, TsError *err);
TsStatus hw_calib_load_text(const char *name, const char *text, HwCalib **out, TsError *err);
void hw_calib_free(HwCalib *c);  /* NULL ok */
int hw_calib_entries(const HwCalib *c);       /* all measurements (gemm, attention, memory) */
const char *hw_calib_gpu(const HwCalib *c);   /* the "gpu" field */
/* The GPU family a name carries ("h100" of "NVIDIA H100 80GB HBM3" and of
 * "h100-sxm5-80gb", "gb200" of "gb200-nvl72"), a static lower-case string;
 * NULL for a name without one (a user's own preset). A calibration whose
 * family is not its preset's was measured on another GPU. */
const char *hw_gpu_family(const char *name);
/* Median SM clock (MHz) sampled while the GEMMs were measured, 1755; 0 when
 * the file has no "clock_mhz" (version 1, or no NVML on the measuring host). */
double hw_calib_clock_mhz(const HwCalib *c);
/* The lowest and highest of those samples (both 0 without "clock_mhz"). */
void hw_calib_clock_range(const HwCalib *c, double *lo, double *hi);
/* The median SM clock while the attention entries ran ("attention_clock_mhz";
 * absent: hw_calib_clock_mhz). */
double hw_calib_attn_clock_mhz(const HwCalib *c);
/* The attention entries time PyTorch SDPA's flash backend (FlashAttention-2:
 * "attention_backend": "flash"), not the fused attention the model
 * describes; the correction divides them by the preset's
 * attn_fa2_factor. */
bool hw_calib_attn_flash(const HwCalib *c);
/* Version 3: the GEMM entries were each timed beside a reference GEMM and are
 * loaded at the reference's sustained (back-to-back) clock, which the model
 * takes for the preset's sustained_clock_mhz (docs/hardware.md). */
bool hw_calib_sustained(const HwCalib *c);
/* The reference GEMM's sustained time in microseconds, its m, n, k into dims
 * and its dtype into *dt (either may be NULL); 0 without one. */
double hw_calib_reference(const HwCalib *c, int64_t dims[3], TsDtype *dt);
/* The fp8 reference's sustained time in microseconds ("fp8_reference": the
 * fp8 entries were timed beside it and are loaded at its sustained clock),
 * its m, n, k into dims (may be NULL); 0 without one. */
double hw_calib_fp8_reference(const HwCalib *c, int64_t dims[3]);
/* SDPA's flash kernel's time factor over the fused attention at head dim d
 * (attn_fa2_factor at 128 and above, attn_fa2_factor_hd64 at 64 and below,
 * linear between). */
double hw_attn_fa2_factor(const GpuSpec *g, int64_t d, bool backward);
/* Measured time (s) of the named memory-bound kernel moving `bytes` (read +
 * written, each tensor once): "copy", "layernorm_fwd", "layernorm_bwd",
 * "rmsnorm_fwd", "rmsnorm_bwd", "gelu_fwd", "gelu_bwd", "swiglu_fwd",
 * "swiglu_bwd", "add", "cast" (bf16 -> fp32). log(time) is interpolated
 * linearly in log(bytes) between the entries around `bytes`; below the
 * smallest entry its time, above the largest its bandwidth. Returns 0 when c
 * is NULL, bytes <= 0, the name is unknown or the table has no such kernel.
 * The compute model's memory correction (hw_memory_time_s) uses "copy" only;
 * cost_kernel reads the others for the fused kernels that name them
 * (PartKernel.calib). */
double hw_calib_memory_kernel_s(const HwCalib *c, const char *kernel, double bytes);

/* Process-group kinds as measured busbw tables name their rows: X(enum
 * suffix, name). A lookup for a kind takes its row, else a row of ANY ("*":
 * every group); ANY is also the kind of a group the tables do not name
 * (world, dp_cp, ...), for which only the "*" rows apply. NONE looks nothing
 * up (the collective model alone); no row has it. */
#define HW_GROUP_LIST(X) \
    X(NONE, "none") X(TP, "tp") X(DP, "dp") X(EP, "ep") X(PP, "pp") X(CP, "cp") X(DP_EP, "dp_ep") X(ANY, "*")
typedef enum {
#define X(e, n) HW_GROUP_##e,
    HW_GROUP_LIST(X)
#undef X
    HW_GROUP_COUNT
} HwGroupKind;
const char *hw_group_name(HwGroupKind k);
bool hw_group_parse(const char *s, HwGroupKind *out);

/* Measured bus bandwidth by (group kind, collective, size): SimAI busbw.yaml
 * or JSON "trainsim-busbw" v1. Opaque; hw_busbw_free. */
typedef struct HwBusbw HwBusbw;
TsStatus hw_busbw_load(const char *path, HwBusbw **out, TsError *err);
TsStatus hw_busbw_load_text(const char *name, const char *text, HwBusbw **out, TsError *err);
void hw_busbw_free(HwBusbw *b);  /* NULL ok */
int hw_busbw_entries(const HwBusbw *b);
/* Measured busbw (bytes/s) for group kind / collective at `bytes`, or 0 when
 * the table has nothing for that pair (or kind is HW_GROUP_NONE).
 * Interpolated in log(size). */
double hw_busbw_lookup(const HwBusbw *b, HwGroupKind kind, TsColl c, double bytes);

/* ---- compute-time model ------------------------------------------------------------- */
typedef struct HwModel {
    GpuSpec gpu;
    const HwCalib *calib;   /* optional, not owned; NULL = pure model */
} HwModel;

typedef enum { HW_PASS_FWD, HW_PASS_DGRAD, HW_PASS_WGRAD } HwPass;

void hw_model_init(HwModel *m);  /* zeroes; load m->gpu next */
/* The dtype GEMMs of `dt` run at on g: dt itself, or the fallback when g has
 * no tensor cores for it (FP8 -> BF16 -> TF32 -> FP32; fp8 on an A100 is bf16). */
TsDtype hw_usable_dtype(const GpuSpec *g, TsDtype dt);

/* batch independent (M x K) @ (K x N) products; FLOPs = 2*batch*M*N*K.
 * One kernel launch. Returns 0 when any dim is 0. dt unsupported by the
 * GPU (peak 0) falls back to the next wider dtype (fp8 -> bf16 -> tf32 -> fp32). */
double hw_gemm_time_s(const HwModel *m, int64_t batch, int64_t M, int64_t N, int64_t K, TsDtype dt);
/* How far the model is from a calibrated GPU at the file's own GEMM shapes
 * of dtype dt: each entry as m reads it (hw_gemm_time_s with the file) over
 * the model's time without it, both at the preset's clock. Returns the
 * number of entries; q gets the 10th percentile, the median and the 90th. */
/* Are m's version 3 GEMM entries read against the preset's units
 * (GpuSpec.calib_ref_s and a bf16 4096^3 reference, the calibrator's)? */
bool hw_calib_against_units(const HwModel *m);
int hw_calib_gemm_fit(const HwModel *m, TsDtype dt, double q[3]);
/* The same for the file's attention entries of one pass (any dtype). */
int hw_calib_attn_fit(const HwModel *m, bool backward, double q[3]);
/* A weight gradient, (M x K) @ (K x N) reduced over K tokens: the same
 * model, with the alignment of the operands' rows, M and N (the token count
 * K is no row length: hw_align_factor). */
double hw_gemm_wgrad_time_s(const HwModel *m, int64_t batch, int64_t M, int64_t N, int64_t K, TsDtype dt);
/* The same product whose A operand's rows are an odd number of 16-bit
 * elements apart (a slice of a wider tensor that matmul passes to cuBLAS as
 * its leading dimension): its loads are 2-byte aligned whatever K is, the
 * gemm_align_penalty_2b path. */
double hw_gemm_odd_lda_time_s(const HwModel *m, int64_t batch, int64_t M, int64_t N, int64_t K, TsDtype dt);
/* A grouped GEMM (torch._grouped_mm, MoE experts): `groups` products of M
 * rows (the mean; standard deviation sd from group to group) x K @ K x N,
 * each group's rows in whole output tiles; k_grouped: the weight gradient,
 * groups x (M x N) each reduced over its own K rows (mean K, spread sd).
 * Two launches (the groups' shapes, the GEMM). */
double hw_grouped_gemm_time_s(const HwModel *m, int64_t groups, int64_t M, double sd, int64_t N, int64_t K,
                              bool k_grouped, TsDtype dt);
/* Fused attention core for B x heads, Sq x Sk, head dim d. FLOPs (FA
 * convention): fwd 4*B*h*Sq*Sk*d (halved if causal, Sq==Sk), backward 2.5x. */
double hw_attention_time_s(const HwModel *m, int64_t B, int64_t heads, int64_t sq, int64_t sk,
                           int64_t d, bool causal, bool backward, TsDtype dt);
/* What dropout with probability p > 0 on the probabilities adds to that
 * kernel (its random draws over the score tiles it walks); 0 for p <= 0. */
double hw_attn_dropout_time_s(const HwModel *m, int64_t B, int64_t heads, int64_t sq, int64_t sk, bool causal,
                              bool backward, double p);
/* The fused core with dropout p on its probabilities: hw_attention_time_s
 * plus hw_attn_dropout_time_s (what the simulator, profile and hw charge). */
double hw_fused_attention_time_s(const HwModel *m, int64_t B, int64_t heads, int64_t sq, int64_t sk, int64_t d,
                                 bool causal, bool backward, TsDtype dt, double p);
/* One memory-bound kernel moving `bytes` (read + written). 0 bytes -> 0. */
double hw_memory_time_s(const HwModel *m, double bytes);
/* PyTorch's generic elementwise kernel over `elements`, at the preset's
 * eager_generic_gelem_per_ms, without launch; 0 when the preset has none. */
double hw_generic_time_s(const HwModel *m, double elements);
/* One of PyTorch's fused norm kernels over `rows` rows streaming `bytes`
 * (pass 0 forward, 1 backward): the streamed bytes at eager_norm_eff of the
 * bandwidth, no faster than its rows at eager_norm_row_s. */
double hw_norm_time_s(const HwModel *m, double bytes, double rows, int pass);
/* Dispatch on op->kind using op->dims (per-rank dims already divided) and
 * op->{fwd,bwd}_bytes. GEMM: fwd M x N x K, dgrad M x K x N, wgrad K x N x M.
 * Attention: FWD forward, DGRAD backward, WGRAD 0. Memory-bound ops: FWD
 * fwd_bytes, DGRAD bwd_bytes, WGRAD 0 (norm affine grads folded in DGRAD).
 * Expert ops are costed as given (dims already per expert). */
double hw_op_time_s(const HwModel *m, const GraphOp *op, HwPass pass, TsDtype dt);
/* Achieved FLOP/s of a GEMM (for reports and benches). */
double hw_gemm_flops_per_s(const HwModel *m, int64_t batch, int64_t M, int64_t N, int64_t K,
                           TsDtype dt);

/* ---- communication model ------------------------------------------------------------- */
typedef struct HwNet {
    ClusterSpec cl;
    const HwBusbw *busbw;   /* optional, not owned */
} HwNet;

/* NCCL algorithms (and TABLE: a measured busbw table) and protocols, as
 * NCCL names them: X(enum suffix, name). */
#define HW_ALGO_LIST(X) X(RING, "ring") X(TREE, "tree") X(NVLS, "nvls") X(DIRECT, "direct") X(TABLE, "table")
typedef enum {
#define X(e, n) HW_ALGO_##e,
    HW_ALGO_LIST(X)
#undef X
    HW_ALGO_COUNT
} HwAlgo;
#define HW_PROTO_LIST(X) X(LL, "LL") X(LL128, "LL128") X(SIMPLE, "Simple")
typedef enum {
#define X(e, n) HW_PROTO_##e,
    HW_PROTO_LIST(X)
#undef X
    HW_PROTO_COUNT
} HwProto;
const char *hw_algo_name(HwAlgo a);
const char *hw_proto_name(HwProto p);

typedef struct HwCollCost {
    double time_s;          /* total */
    double lat_s;           /* latency part */
    double busbw_bytes_per_s;/* nccl-tests busbw implied by time_s */
    HwAlgo algo;
    HwProto proto;
} HwCollCost;

void hw_net_init(HwNet *net, const ClusterSpec *c);
/* Cost of one collective over `group_size` ranks spanning `group_nodes`
 * distinct nodes (1 = inside the scale-up domain). bytes = whole buffer
 * (nccl-tests convention). nic_sharing = GPUs of one node using the node's
 * NICs concurrently for this kind of traffic (1 default: each GPU owns its
 * rail). kind selects the busbw table rows (HW_GROUP_NONE: the model alone).
 * group_size <= 1 or bytes <= 0 costs 0. */
HwCollCost hw_coll_cost(const HwNet *net, TsColl c, double bytes, int64_t group_size,
                        int64_t group_nodes, int64_t nic_sharing, HwGroupKind kind);
double hw_coll_time_s(const HwNet *net, TsColl c, double bytes, int64_t group_size,
                      int64_t group_nodes, int64_t nic_sharing, HwGroupKind kind);
/* One send/recv of `bytes` between two GPUs (pipeline boundary, CP ring step). */
double hw_p2p_time_s(const HwNet *net, double bytes, bool cross_node);
/* MoE token exchange: each of ep ranks sends bytes_per_rank spread over the
 * other ranks (dispatch or combine), ep ranks spanning `nodes` nodes. */
double hw_alltoall_time_s(const HwNet *net, double bytes_per_rank, int64_t ep, int64_t nodes);
/* How an EP dispatch or combine travels (plan.h PlanMoeDispatch in network
 * terms): deepep sends one copy of a token per destination node over the
 * NICs and forwards it over NVLink inside the node (DeepEP); topk: experts
 * per token; node_limit: a token's experts lie on at most this many nodes
 * (0: no limit); load: what the busiest EP rank receives over the mean
 * (>= 1, MoE imbalance). */
typedef struct HwEpRoute {
    bool deepep;
    int64_t topk, node_limit;
    double load;
} HwEpRoute;
/* One dispatch or combine of bytes_per_rank (every token-expert copy of the
 * rank's tokens, as an all-to-all carries them) over ep ranks on `nodes`
 * nodes. r == NULL: a balanced NCCL all-to-all (hw_alltoall_time_s). With
 * deepep across nodes: a token reaches d distinct nodes (node_limit, else the
 * expectation N(1 - (1 - 1/N)^topk) over N nodes), (N-1)/N of them remote:
 * NIC bytes = bytes x d(N-1)/N / topk, NVLink bytes = bytes x (ppn-1)/ppn;
 * the two legs pipeline, the slower one sets the time. E.g. DeepSeek-V3's
 * 470 MB of BF16 copies per rank on 8 nodes, node limit 4: 206 MB over the
 * NICs, 3.5 copies per token instead of 7. */
double hw_ep_a2a_time_s(const HwNet *net, double bytes_per_rank, int64_t ep, int64_t nodes, const HwEpRoute *r);

#endif
