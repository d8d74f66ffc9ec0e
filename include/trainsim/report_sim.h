/*
 * trainsim/report_sim.h — what `trainsim simulate` prints: the readable
 * summary of a simulated plan and its JSON ("trainsim-simulate", version 1),
 * and the same for a replayed workload (`simulate --workload`), with the
 * replay's Chrome trace.
 *
 * Inputs: the SimSetup that was simulated (its plan resolved by
 * sim_simulate) and the SimResult (sim.h). The text names the model, the
 * cluster, the plan, the runtime behaviours that differ from
 * sim_options_init, the headline metrics, memory per GPU, the breakdown of
 * the critical stage and, when another stage works markedly longer, that
 * stage's breakdown; then the warnings. The JSON carries every figure at full
 * precision (ts_json_fmt_double), the plan, the options, the model and the
 * cluster. A replay (sim_replay.h) reports its semantics (SimAI rows,
 * Chakra ranks or the task graph), the layout the workload gives, tokens/s
 * when the batch is known (sim_replay_throughput) and the breakdown. Units:
 * seconds, bytes, FLOPs; the text prints GiB and ms/us.
 *
 * Ownership: text is appended to the caller's TsBuf (ts_buf_free); nothing
 * else is allocated. Failure: none reported; an allocation failure sets
 * TsBuf.oom (the caller checks it before writing the buffer out).
 *
 * Example:
 *     if (sim_simulate(&in, NULL, &r, &err) == TS_OK) {
 *         TsBuf b = {0};
 *         json ? rep_sim_json(&in, &r, &b) : rep_sim_text(&in, &r, &b);
 *         ...
 *     }
 */
#ifndef TRAINSIM_REPORT_SIM_H
#define TRAINSIM_REPORT_SIM_H

#include "trainsim/common.h"
#include "trainsim/hw.h"
#include "trainsim/sim.h"
#include "trainsim/train.h"
#include "trainsim/workload.h"

/* A whole training run of the simulated step (train.h), or NULL: none. */
typedef struct RepTrain {
    const TrainOptions *opt;
    const TrainEstimate *est;
} RepTrain;
/* The summary `trainsim simulate` prints; with a training run, its section
 * (tokens, steps, wall clock, GPU-hours, cost, goodput and what it loses)
 * before the warnings. */
void rep_sim_text(const SimSetup *in, const SimResult *r, const RepTrain *train, TsBuf *out);
/* `trainsim simulate --json`: one object and a newline; with a training run,
 * "train": {"tokens", "steps", "wall_s", "compute_s", "gpu_hours", "cost",
 * "price_per_gpu_hour", "goodput", "job_mtbf_s", "checkpoint_bytes",
 * "checkpoint_s", "checkpoint_interval_s", "restart_s"}. */
void rep_sim_json(const SimSetup *in, const SimResult *r, const RepTrain *train, TsBuf *out);
/* The sentence of warning k of r (0 <= k < r->n_warnings) into buf, cap
 * bytes, truncated to fit: "does not fit: 82.1 GiB per GPU needed, ...". */
void rep_sim_warning(const SimResult *r, int k, char *buf, size_t cap);

/* ---- a replayed workload ---------------------------------------------------- */
/* What the replay's text names besides the workload and its result. */
typedef struct RepReplay {
    const char *path;           /* the workload as given, "aicb.txt" */
    const ClusterSpec *cluster; /* the cluster it was replayed on (GPU, name, size) */
    int64_t seq;                /* tokens per sequence tokens/s was derived from, 4096 (0: none) */
    int64_t micro_batch;        /* sequences per micro-batch, likewise, 1 */
    bool batch_from_workload;   /* seq and micro-batch are the workload's own (a generated JSON) */
    const char *trace;          /* the Chrome trace written of a per-rank replay, NULL: none */
    int64_t trace_first, trace_count; /* the ranks that trace holds */
} RepReplay;
/* The summary `trainsim simulate --workload` prints. */
void rep_replay_text(const Workload *w, const SimResult *r, const RepReplay *o, TsBuf *out);
/* Its JSON ("trainsim-simulate" with "semantics": simai, chakra or dag). */
void rep_replay_json(const Workload *w, const SimResult *r, const RepReplay *o, TsBuf *out);
/* The replay's Chrome trace (spans recorded by sim_replay_dag): one process
 * per stage (rep_trace_chrome), or, for a per-rank workload, per rank of
 * first .. first + count - 1 (rep_trace_ranks); titled after w->source. */
void rep_replay_trace(const Workload *w, const SimResult *r, int64_t first, int64_t count, TsBuf *out);

#endif
