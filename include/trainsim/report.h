/*
 * trainsim/report.h — human and machine reports.
 *
 * Profile part (this file's first section): the report of the current
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
 * Number formatting (units.c) is shared by every report. The HTML report and
 * the Chrome trace are the later sections of this header.
 */
#ifndef TRAINSIM_REPORT_H
#define TRAINSIM_REPORT_H

#include "trainsim/graph.h"
#include "trainsim/hw.h"
#include "trainsim/sim.h"

/* ---- number formatting (DeepSpeed profiler conventions) ----------------------- */
/* Python round(x, 2) then format(..., 'g'): "44.7", "109.48", "100", "0". */
void rep_fmt_g2(char *out, size_t cap, double x);
/* number_to_string: "89.45 G", "12 " (the space is always there). */
void rep_fmt_number(char *out, size_t cap, double x);
void rep_fmt_macs(char *out, size_t cap, double macs);     /* "44.7 GMACs" */
void rep_fmt_flops(char *out, size_t cap, double flops);   /* "660.07 GFLOPS" */
void rep_fmt_duration(char *out, size_t cap, double s);    /* "135.52 ms" */
void rep_fmt_params(char *out, size_t cap, double n);      /* "109.48 M", "6.74 B", "0" */

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


/* ======================================================================== */
/*
 * HTML part — the visual report: one self-contained HTML file
 * (inline CSS and SVG, no script, no network) for a simulated plan or a
 * plan sweep. The writer itself (html.c) depends on nothing but common.h;
 * rep_plan_view_from_sim (html_sim.c) converts a SimResult.
 *
 * Inputs are small "views": plain data that the simulator and the search
 * results are converted to (rep_plan_view_from_sim below; the sweep view is
 * filled by rep_sweep_html, report_sweep.h). The writer never reaches into
 * SimResult, so it can be tested on hand-made views (tests/browser/fixture.c).
 *
 *   RepPlanView   one plan: headline metrics, knobs, the pipeline timeline
 *                 (rows = stages, bars = forward / backward / communication /
 *                 bubble intervals in seconds), the iteration breakdown
 *                 (seconds per category, summing to the iteration time), and
 *                 memory per GPU by category against the GPU's capacity.
 *   RepSweepView  a sweep: every simulated plan as (tokens/s, bytes per GPU),
 *                 the top-k ranked plans highlighted, the top-k table as
 *                 strings, and optionally the best plan's RepPlanView.
 *
 * Units: seconds, bytes, tokens/s. Output is deterministic (numbers printed
 * with fixed precision), so golden tests can compare it byte for byte.
 * Invariants: timeline intervals have 0 <= start_s <= end_s; stage indices
 * are in [0, n_stages). Writers append to a TsBuf and fail only on OOM
 * (TS_ERR_INTERNAL); all strings are HTML-escaped.
 *
 * Example:
 *     RepPlanView v = {.title = "llama3-70b on 1024 x H100", .n_stages = 2,
 *                      .iteration_s = 1.5, .capacity_bytes = 80e9};
 *     RepInterval iv[] = {{0, REP_FWD, 0.0, 0.2, 0}, {1, REP_BUBBLE, 0.0, 0.2, -1}};
 *     v.timeline = iv; v.n_timeline = 2;
 *     TsBuf html = {0}; rep_html_plan(&v, &html, &err);
 *     ts_write_file_atomic("plan.html", html.data, html.len, &err);
 */
/* X(NAME, "label", fill colour) — kinds of timeline bars. */
#define REP_KIND_LIST(X)                      \
    X(FWD, "forward", "#4e79a7")              \
    X(BWD, "backward", "#59a14f")             \
    X(RECOMPUTE, "recompute", "#9c755f")      \
    X(COMM, "communication", "#f28e2b")       \
    X(OPTIMIZER, "optimizer", "#b07aa1")      \
    X(BUBBLE, "bubble", "#d3d3d3")
typedef enum {
#define X(e, n, c) REP_##e,
    REP_KIND_LIST(X)
#undef X
    REP_KIND_COUNT
} RepKind;
const char *rep_kind_name(RepKind k);

typedef struct RepInterval {
    int stage;      /* pipeline stage, 0-based; e.g. 3 */
    RepKind kind;   /* what the stage does in this interval */
    double start_s; /* from the start of the iteration, seconds; e.g. 0.125 */
    double end_s;   /* >= start_s */
    int micro;      /* micro-batch index shown in the tooltip, -1 = none */
} RepInterval;

typedef struct RepKV {
    const char *key;   /* "tp" */
    const char *value; /* "8" */
} RepKV;

typedef struct RepAmount {
    const char *name; /* "tp_comm_exposed", "activations" */
    double value;     /* seconds (breakdown) or bytes (memory) */
} RepAmount;

typedef struct RepPlanView {
    const char *title;        /* "llama3-70b, 1024 x H100, seq 8192" */
    const char *generator;    /* "trainsim 0.1.0 simulate" (shown in the footer) */
    const RepKV *metrics;     /* headline: iteration time, tokens/s, MFU, ... */
    int n_metrics;
    const RepKV *knobs;       /* the plan, resolved: tp, pp, vpp, ... */
    int n_knobs;
    const RepInterval *timeline; /* any order */
    int n_timeline;
    int n_stages;             /* rows of the timeline; e.g. 8 */
    double iteration_s;       /* x-axis length; >= every end_s; e.g. 4.2 */
    const RepAmount *breakdown; /* seconds per category, summing to iteration_s */
    int n_breakdown;
    const RepAmount *memory;  /* bytes per GPU by category (worst rank) */
    int n_memory;
    double capacity_bytes;    /* HBM per GPU; e.g. 80e9 */
    const RepAmount *stage_breakdown; /* [n_stages * n_breakdown]: each stage's own breakdown
                                         (same categories as breakdown), or NULL */
    int slowest_stage;        /* marked in the stage chart; -1 none */
} RepPlanView;

typedef struct RepSweepPoint {
    double tokens_per_s;  /* e.g. 2.1e6 */
    double memory_bytes;  /* peak per GPU; e.g. 61e9 */
    int rank;             /* 0-based position in the ranking if in the top-k, else -1 */
} RepSweepPoint;

typedef struct RepSweepView {
    const char *title;          /* "sweep: llama3-70b, 1024 x H100" */
    const char *generator;      /* "trainsim 0.1.0 sweep" */
    const RepKV *metrics;       /* enumerated / pruned / simulated / elapsed */
    int n_metrics;
    const RepSweepPoint *points; /* every simulated plan */
    int n_points;
    double capacity_bytes;      /* drawn as a vertical line */
    const char *const *columns; /* top-k table header; n_columns strings */
    int n_columns;
    const char *const *cells;   /* n_rows * n_columns strings, row-major */
    int n_rows;
    const RepPlanView *best;    /* optional: details of the best plan */
} RepSweepView;

/* Append a complete HTML document for one plan / one sweep to out.
 * Returns TS_OK, or TS_ERR_INTERNAL when out ran out of memory. */
TsStatus rep_html_plan(const RepPlanView *v, TsBuf *out, TsError *err);
TsStatus rep_html_sweep(const RepSweepView *v, TsBuf *out, TsError *err);

/* Convert a simulation to a plan view: metrics, knobs (from in->knobs and
 * in->hw), the timeline from r->spans (simulate with record = true; without
 * spans the timeline is empty), bubbles as the gaps of each stage's compute
 * stream, the breakdown and the memory. Strings and arrays are allocated in
 * arena a, which must outlive *out. TS_ERR_INTERNAL on allocation failure. */
TsStatus rep_plan_view_from_sim(const SimSetup *in, const SimResult *r, const char *title, TsArena *a,
                                RepPlanView *out, TsError *err);

/* Human-readable numbers shared by the text and HTML outputs:
 * 1.23e12 -> "1.23 T", bytes 6.1e10 -> "56.8 GiB", 0.0123 s -> "12.3 ms". */
void rep_fmt_si(char *out, size_t cap, double v);
void rep_fmt_bytes(char *out, size_t cap, double bytes);
void rep_fmt_seconds(char *out, size_t cap, double s);

/* ======================================================================== */
/*
 * Chrome trace part — the trace writer for a simulated iteration.
 *
 * Writes the Trace Event Format (JSON object form) that Perfetto and
 * chrome://tracing open: one process per pipeline stage ("stage 3"), one
 * thread per stream (compute, tp_comm, cp_comm, ep_comm, pp_comm, dp_comm),
 * complete events ("ph": "X") with ts/dur in microseconds. Forward and
 * backward tasks are named "F mb 5 c 1" / "B mb 5 c 1"; with `expand` set
 * each task is split into per-layer slices (kernel-level view), otherwise one
 * slice per task. metadata.generator names trainsim and its version.
 *
 * Example:
 *     SimResult r;  (sim_simulate with opt.record = true)
 *     TsBuf b = {0}; rep_trace_chrome(&r, "gpt3-175b tp8 pp8", 0, &b);
 */
/* layers_per_chunk > 0 splits each F/B span into that many equal layer
 * slices (a kernel-level expansion); 0 keeps one slice per task. Spans must
 * have been recorded (r->spans); with none, writes an empty trace. */
void rep_trace_chrome(const SimResult *r, const char *title, int64_t layers_per_chunk, TsBuf *out);
/* A replayed per-rank workload (a Chakra set read rank by rank): one process
 * per rank first .. first + count - 1 ("rank 5", pid = the rank), a thread
 * per stream; r->spans' stage is the rank (sim_replay_dag). */
void rep_trace_ranks(const SimResult *r, const char *title, int64_t first, int64_t count, TsBuf *out);

#endif
