/*
 * trainsim/report_html.h — the visual report: one self-contained HTML file
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
 * Ownership: views borrow every string and array they point to; the caller
 * keeps them alive while writing (rep_plan_view_from_sim allocates its
 * view's in an arena the caller destroys).
 *
 * Example:
 *     RepPlanView v = {.title = "llama3-70b on 1024 x H100", .n_stages = 2,
 *                      .iteration_s = 1.5, .capacity_bytes = 80e9};
 *     RepInterval iv[] = {{0, REP_FWD, 0.0, 0.2, 0}, {1, REP_BUBBLE, 0.0, 0.2, -1}};
 *     v.timeline = iv; v.n_timeline = 2;
 *     TsBuf html = {0}; rep_html_plan(&v, &html, &err);
 *     ts_write_file_atomic("plan.html", html.data, html.len, &err);
 */
#ifndef TRAINSIM_REPORT_HTML_H
#define TRAINSIM_REPORT_HTML_H

#include "trainsim/common.h"
#include "trainsim/sim.h"

/* X(NAME, "label") — kinds of timeline bars; html.c colours them by label. */
#define REP_KIND_LIST(X)     \
    X(FWD, "forward")        \
    X(BWD, "backward")       \
    X(RECOMPUTE, "recompute") \
    X(COMM, "communication") \
    X(OPTIMIZER, "optimizer") \
    X(BUBBLE, "bubble")
typedef enum {
#define X(e, n) REP_##e,
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
    const char *stage_note;   /* under the stage chart: what the critical stage waits on, e.g.
                                 "stage 1 works 30.5 s ... mostly the EP all-to-all"; NULL none */
    const char *const *warnings; /* the simulation's warnings (SimResult.warnings, the text of
                                    simulate's "warning:" lines), shown under the metrics; n_warnings */
    int n_warnings;
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
    const char *const *notes;   /* the notes under the sweep's table (rep_sweep_text), one a line,
                                   e.g. "#1: 1,2,2,2,2,1"; shown under the top-k table; n_notes */
    int n_notes;
} RepSweepView;

/* A label of a chart point, placed beside it without covering another label
 * or another point (rep_place_labels). SVG pixels, y down. */
typedef struct RepLabel {
    double x, y;   /* in: the point the label names, e.g. (420.5, 133.0) */
    double w, h;   /* in: the label's box, e.g. 26 x 15 for "#2" in 12 px type */
    double lx, ly; /* out: the top-left corner of the box as placed */
    bool moved;    /* out: placed away from its point (draw a leader line) */
} RepLabel;

/* Place n labels in order (the first gets the nearest spot): each one right,
 * left, above or below its point, else stepped up or down beside it by one
 * box height at a time, at the first spot whose box overlaps no label placed
 * before and no point's disc of radius r, kept inside [x0, x1] x [y0, y1].
 * Where no spot is free within the bounds the label goes to its last try
 * (never seen with ten labels on a 1040 x 420 plot). */
void rep_place_labels(RepLabel *l, int n, double r, double x0, double y0, double x1, double y1);

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

#endif
