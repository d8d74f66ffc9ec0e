/*
 * trainsim/report_trace.h — Chrome trace writer for a simulated iteration.
 * (Its own header until report.h exists on this branch; the lead may fold it
 * into report.h as a section.)
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
#ifndef TRAINSIM_REPORT_TRACE_H
#define TRAINSIM_REPORT_TRACE_H

#include "trainsim/sim.h"

/* layers_per_chunk > 0 splits each F/B span into that many equal layer
 * slices (a kernel-level expansion); 0 keeps one slice per task. Spans must
 * have been recorded (r->spans); with none, writes an empty trace. */
void rep_trace_chrome(const SimResult *r, const char *title, int64_t layers_per_chunk, TsBuf *out);

#endif
