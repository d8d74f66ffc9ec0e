/*
 * trainsim/report_sim.h — what `trainsim simulate` prints: the readable
 * summary of a simulated plan and its JSON ("trainsim-simulate", version 1).
 *
 * Inputs: the SimSetup that was simulated (its plan resolved by
 * sim_simulate) and the SimResult (sim.h). The text names the model, the
 * cluster, the plan, the runtime behaviours that differ from
 * sim_options_init, the headline metrics, memory per GPU, the breakdown of
 * the critical stage and, when another stage works markedly longer, that
 * stage's breakdown; then the warnings. The JSON carries every figure at full
 * precision (ts_json_fmt_double), the plan, the options, the model and the
 * cluster. Units: seconds, bytes, FLOPs; the text prints GiB and ms/us.
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
#include "trainsim/sim.h"

/* The summary `trainsim simulate` prints. */
void rep_sim_text(const SimSetup *in, const SimResult *r, TsBuf *out);
/* `trainsim simulate --json`: one object and a newline. */
void rep_sim_json(const SimSetup *in, const SimResult *r, TsBuf *out);

#endif
