/*
 * trainsim/report_sweep.h — what `trainsim sweep` writes: the ranked table of
 * the top-k plans (stdout), the JSON of the ranking and of every simulated
 * plan ("trainsim-sweep", version 1), the CSV of every simulated plan
 * ("trainsim-sweep-csv" v3) and the HTML report (report_html.h's sweep view:
 * every plan by tokens/s and memory, the top-k table, the best plan's
 * timeline and breakdown).
 *
 * Inputs: the search's configuration and result (search.h) and a RepSweep
 * naming what was swept. The table shows ep_exp_s only for models with
 * experts, cp-x only when several CP exchanges were searched, cp_exp_s only
 * when a ranked plan has cp > 1; plans whose pp x vpp does not divide the
 * layers get their layers per chunk listed. Units: seconds, bytes, tokens/s
 * (the table prints GiB).
 *
 * Ownership: output is appended to the caller's TsBuf; the RepSweep, the
 * result and the best plan's setup and result stay the caller's. Failure:
 * the text writers report none (TsBuf.oom on allocation failure);
 * rep_sweep_html returns TS_ERR_INTERNAL when out of memory.
 *
 * Example:
 *     RepSweep s = {.model = &m, .gpu = &hw.gpu, .cluster = "dgx-h100", .gpus = "64",
 *                   .seq = 4096, .global_batch = 1024, .dtype = TS_DTYPE_BF16};
 *     TsBuf b = {0}; rep_sweep_text(&s, &cfg, &res, &b);   // the ranked table
 */
#ifndef TRAINSIM_REPORT_SWEEP_H
#define TRAINSIM_REPORT_SWEEP_H

#include "trainsim/common.h"
#include "trainsim/hw.h"
#include "trainsim/model.h"
#include "trainsim/search.h"
#include "trainsim/sim.h"

/* What was swept, as the outputs name it. */
typedef struct RepSweep {
    const ModelSpec *model;   /* the model every plan trains, llama3-8b */
    const GpuSpec *gpu;       /* its GPU; the memory capacity is gpu->hbm_bytes */
    const char *cluster;      /* the cluster's name, "dgx-h100" */
    const char *gpus;         /* the GPU counts as given, "64" or "64,128" */
    int64_t seq;              /* tokens per sequence, 4096 */
    int64_t global_batch;     /* sequences per iteration, 1024 */
    TsDtype dtype;            /* training dtype of every plan, bf16 */
    double headroom_bytes;    /* --headroom: what each GPU keeps free, 0 */
} RepSweep;

/* The ranked table and the notes under it. */
void rep_sweep_text(const RepSweep *s, const SearchConfig *c, const SearchResult *r, TsBuf *out);
/* The JSON: what was swept, the search's statistics, the top-k and every
 * simulated plan (r->all: the search kept them, SearchConfig.keep_all). */
void rep_sweep_json(const RepSweep *s, const SearchConfig *c, const SearchResult *r, TsBuf *out);
/* Every simulated plan as CSV, a comment line naming the format first. */
void rep_sweep_csv(const SearchResult *r, TsBuf *out);
/* The HTML report of the sweep (rep_html_sweep). best_in / best_r: the best
 * plan simulated again with its timeline recorded (SimOptions.record), shown
 * in detail; NULL leaves the details out. */
TsStatus rep_sweep_html(const RepSweep *s, const SearchConfig *c, const SearchResult *r, const SimSetup *best_in,
                        const SimResult *best_r, TsBuf *out, TsError *err);

#endif
