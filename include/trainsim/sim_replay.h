/*
 * trainsim/sim_replay.h — the replay of a workload (workload.h): an imported
 * SimAI/AICB, ASTRA-sim or op-table file with SimAI's semantics, or a task
 * graph (our JSON, a Chakra set) as its graph says. One replay engine serves
 * every format; replaying a workload trainsim generated gives `simulate`'s
 * answer by construction.
 *
 * Inputs: a Workload, the cluster's communication model (hw.h). Output: a
 * SimResult (sim_pipeline.h) with the iteration time, the critical stage (or
 * rank) and the breakdown. Units: seconds, bytes.
 *
 * Ownership: the workload and the net stay the caller's; with record, the
 * result's spans are the result's own (SimResult.owned: sim_result_free) and
 * name tasks of the workload, which must outlive it. Failure: TS_ERR_INPUT
 * (a workload without rows or tasks, a recv without its send, a deadlock),
 * TS_ERR_INTERNAL on allocation failure.
 */
#ifndef TRAINSIM_SIM_REPLAY_H
#define TRAINSIM_SIM_REPLAY_H

#include "trainsim/common.h"
#include "trainsim/hw.h"
#include "trainsim/sim_pipeline.h"
#include "trainsim/workload.h"

/* Run an imported layer-format workload (wl_read_file: SimAI/AICB, ASTRA-sim
 * 1.0 text, op table) with SimAI's semantics: forward over the rows, backward
 * reversed with blocking input-grad comm and non-blocking weight-grad comm,
 * GA micro-batches unrolled, no pipeline interaction (docs/simulate.md says
 * where SimAI's analytical mode computes differently). Compute times from the
 * file, collectives from hw_coll_time_s. Fills iteration_time_s and the
 * breakdown (compute, tp/ep/dp exposed). TS_ERR_INPUT when there are no rows. */
TsStatus sim_replay_simai(const Workload *w, const HwNet *net, SimResult *out, TsError *err);
/* Run a task-graph workload (the JSON IR: every class, tasks with data and
 * control dependencies, send/recv matched by peer stage and tag) as the
 * graph says: a task starts when its dependencies are done and its stream
 * (per class: compute, send, one per group kind) is free; COMP durations
 * from the file, COLL from hw_coll_time_s over the workload's rank layout,
 * SEND from hw_p2p_time_s. Fills iteration_time_s, critical_stage and the
 * breakdown of the slowest class (idle gaps charged to the dependency that
 * ended last). Compute slowed by collectives running beside it, as the
 * simulator charges it: `overlap_slowdown` (SimOptions.overlap_slowdown)
 * times the seconds each collective of a class overlaps its compute; the
 * graph is run again with that slow-down held before the class's step (its
 * first task of phase opt; a class without one ends that much later), so
 * the step's collectives meet behind the slowed class (breakdown
 * overlap_slowdown: the critical class's). TS_ERR_INPUT when
 * there are no tasks, a recv has no send, or the graph deadlocks. */
TsStatus sim_replay_dag(const Workload *w, const HwNet *net, double overlap_slowdown, bool record,
                        SimResult *out, TsError *err);
/* With record: out->spans holds one 'T' span per task that occupies a stream
 * (compute, collective, send; named after the task, the workload must
 * outlive the result), out->owned is set: free with sim_result_free. */
/* Throughput of a replayed iteration (r->iteration_time_s > 0), which a
 * workload file does not give by itself: tokens per iteration = ga x
 * micro_batch x dp x seq, dp = world / (tp x pp x cp). Sets r's tokens_per_s,
 * tokens_per_s_per_gpu and samples_per_s and returns true; false (r
 * untouched) when seq or micro_batch is not positive or the layout or the
 * time is unknown. A generated JSON workload carries its own seq and
 * micro-batch (WlParallel); other formats need them from the caller. */
bool sim_replay_throughput(const Workload *w, int64_t seq, int64_t micro_batch, SimResult *r);

#endif
