/*
 * trainsim/report.h — the model profile: the report of the current
 * DeepSpeed Flops Profiler (deepspeed/profiling/flops_profiler/profiler.py,
 * reference/flops_profiler.md §1.5-1.6), computed from a ModuleGraph instead
 * of hooks: summary ('{:<70}  {:<8}' lines), aggregated profile per depth
 * (top-k classes by params, MACs and latency), and the detailed tree in
 * PyTorch's repr layout with every extra_repr replaced by
 * "params = p% Params, MACs = p% MACs, latency = p% latency, FLOPS[, extra]",
 * ModuleLists collapsed as "(0-11): 12 x BertLayer(...)". After it, a
 * trainsim section: exact training FLOPs for recompute none / selective /
 * full next to the closed forms of Korthikanti et al. 2022 and Narayanan et
 * al. 2021 (reference/flops_profiler.md §4).
 *
 * Inputs: a built graph and a compute model (GPU spec, dtype, optional
 * calibration table). Latency of a module = sum of its ops' forward times
 * from rep_op_time_s, which is hw_op_time_s(HW_PASS_FWD): tile/wave
 * quantized GEMMs, FlashAttention-style core, memory-bound ops with a
 * small-tensor floor, per-kernel launch overhead (hw.h). Units: FLOPs,
 * bytes, seconds; numbers are formatted exactly like DeepSpeed's
 * number_to_string (2 decimals, :g).
 *
 * Example:
 *     RepCompute c; rep_compute_init(&c, "a100-sxm4-80gb", TS_DTYPE_BF16, &err);
 *     RepProfileOptions po; rep_profile_options_init(&po);
 *     TsBuf b = {0}; rep_profile_text(g, &c, &po, &b);   // the DeepSpeed report
 *
 * Number formatting (units.c) is shared by every report and declared here.
 * The other reports have their own headers: report_html.h (the HTML
 * report), report_trace.h (Chrome traces), report_sim.h (`simulate`'s
 * summary and JSON), report_sweep.h (`sweep`'s table, JSON, CSV, HTML).
 *
 * Ownership: reports append to the caller's TsBuf; the graph and the compute
 * model stay the caller's (RepCompute does not own its calibration).
 * Failure: rep_compute_init returns TS_ERR_INPUT for an unknown GPU (with a
 * hint); the writers report none (TsBuf.oom on allocation failure).
 */
#ifndef TRAINSIM_REPORT_H
#define TRAINSIM_REPORT_H

#include "trainsim/common.h"
#include "trainsim/graph.h"
#include "trainsim/hw.h"
#include "trainsim/plan.h"

/* ---- number formatting (DeepSpeed profiler conventions) ----------------------- */
/* Python round(x, 2) then format(..., 'g'): "44.7", "109.48", "100", "0". */
void rep_fmt_g2(char *out, size_t cap, double x);
/* number_to_string: "89.45 G", "12 " (the space is always there). */
void rep_fmt_number(char *out, size_t cap, double x);
void rep_fmt_macs(char *out, size_t cap, double macs);     /* "44.7 GMACs" */
void rep_fmt_flops(char *out, size_t cap, double flops);   /* "660.07 GFLOPS" */
void rep_fmt_duration(char *out, size_t cap, double s);    /* "135.52 ms" */
void rep_fmt_params(char *out, size_t cap, double n);      /* "109.48 M", "6.74 B", "0" */

/* Human-readable numbers shared by the text and HTML outputs:
 * 1.23e12 -> "1.23 T", bytes 6.1e10 -> "56.8 GiB", 0.0123 s -> "12.3 ms". */
void rep_fmt_si(char *out, size_t cap, double v);
void rep_fmt_bytes(char *out, size_t cap, double bytes);
void rep_fmt_seconds(char *out, size_t cap, double s);


/* ---- compute model for the profile ------------------------------------------------ */
typedef struct RepCompute {
    HwModel hw;           /* hw.gpu from hw_gpu_load; hw.calib optional (not owned) */
    TsDtype dtype;        /* bf16 */
} RepCompute;

/* Load the GPU preset or file; no calibration (set c->hw.calib to add one). */
TsStatus rep_compute_init(RepCompute *c, const char *gpu, TsDtype dtype, TsError *err);
/* Forward time of one op in seconds: hw_op_time_s(&c->hw, op, HW_PASS_FWD, c->dtype). */
double rep_op_time_s(const RepCompute *c, const GraphOp *op);

/* ---- the profile ------------------------------------------------------------------ */
typedef struct RepProfileOptions {
    int64_t module_depth;  /* -1: all levels but the innermost (DeepSpeed's quirk) */
    int64_t top_modules;   /* 1 (DeepSpeed default) */
    bool detailed;         /* true: print the annotated module tree */
    int64_t profile_step;  /* "Profile Summary at step N", 1 */
    PlanRecompute recompute;/* which training row is marked (none) */
} RepProfileOptions;

void rep_profile_options_init(RepProfileOptions *o);

/* Per-module figures the reports use (DeepSpeed semantics: recursive). */
typedef struct RepModuleStats {
    double params;      /* tied tensors once per subtree */
    double macs, flops; /* DeepSpeed forward counts */
    double latency_s;   /* sum of the ops' times */
} RepModuleStats;

/* Fill stats[n_mods] (caller-allocated). */
void rep_module_stats(const ModuleGraph *g, const RepCompute *c, RepModuleStats *stats);

/* Training FLOPs of one iteration over the graph's micro-batch. */
typedef struct RepTraining {
    double exact_flops[PLAN_RECOMPUTE_COUNT];  /* by PlanRecompute: fwd+dgrad+wgrad (+ recomputed fwd) */
    double closed_flops[PLAN_RECOMPUTE_COUNT]; /* Korthikanti none/selective, Narayanan full */
} RepTraining;
void rep_training_flops(const ModuleGraph *g, RepTraining *out);
/* Both in one pass over the ops (same figures; what the reports use). */
void rep_stats_and_training(const ModuleGraph *g, const RepCompute *c, RepModuleStats *stats, RepTraining *out);

/* The DeepSpeed-style text report plus the training section. */
void rep_profile_text(const ModuleGraph *g, const RepCompute *c, const RepProfileOptions *o, TsBuf *out);
/* JSON: {"format":"trainsim.profile","version":1, totals, training, modules:[...]} */
void rep_profile_json(const ModuleGraph *g, const RepCompute *c, const RepProfileOptions *o, TsBuf *out);

#endif
