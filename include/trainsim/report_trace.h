/*
 * trainsim/report_trace.h — the Chrome trace of a simulated or replayed
 * iteration.
 *
 * Writes the Trace Event Format (JSON object form) that Perfetto and
 * chrome://tracing open: one process per pipeline stage ("stage 3"), one
 * thread per stream (compute, tp_comm, cp_comm, ep_comm, pp_comm, dp_comm),
 * complete events ("ph": "X") with ts/dur in microseconds. Forward and
 * backward tasks are named "F mb 5 c 1" / "B mb 5 c 1"; with `expand` set
 * each task is split into per-layer slices (kernel-level view), otherwise one
 * slice per task. metadata.generator names trainsim and its version.
 *
 * Ownership: the trace is appended to the caller's TsBuf; the result and
 * the task names its spans borrow stay the caller's. Failure: none reported
 * (TsBuf.oom on allocation failure).
 *
 * Example:
 *     SimResult r;  (sim_simulate with opt.record = true)
 *     TsBuf b = {0}; rep_trace_chrome(&r, "gpt3-175b tp8 pp8", 0, &b);
 */
#ifndef TRAINSIM_REPORT_TRACE_H
#define TRAINSIM_REPORT_TRACE_H

#include "trainsim/common.h"
#include "trainsim/sim_pipeline.h"

/* layers_per_chunk > 0 splits each F/B span into that many equal layer
 * slices (a kernel-level expansion); 0 keeps one slice per task. Spans must
 * have been recorded (r->spans); with none, writes an empty trace. */
void rep_trace_chrome(const SimResult *r, const char *title, int64_t layers_per_chunk, TsBuf *out);
/* A replayed per-rank workload (a Chakra set read rank by rank): one process
 * per rank first .. first + count - 1 ("rank 5", pid = the rank), a thread
 * per stream; r->spans' stage is the rank (sim_replay_dag). */
void rep_trace_ranks(const SimResult *r, const char *title, int64_t first, int64_t count, TsBuf *out);

#endif
