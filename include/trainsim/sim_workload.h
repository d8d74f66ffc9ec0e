/*
 * trainsim/sim_workload.h — the workload of a simulated plan: the task graph
 * (wl_build, workload_build.h) and AICB's SimAI rows (wl_build_aicb) of a
 * SimSetup's plan, their kernels costed exactly as sim_simulate costs them,
 * so that replaying the graph (sim_replay_dag) agrees with the simulation.
 *
 * Ownership: a built Workload is the caller's (wl_destroy). Failure:
 * TS_ERR_PLAN as sim_simulate (the plan is resolved with the simulator's
 * rules), TS_ERR_INTERNAL on allocation failure; *out is NULL on failure.
 */
#ifndef TRAINSIM_SIM_WORKLOAD_H
#define TRAINSIM_SIM_WORKLOAD_H

#include "trainsim/sim.h"
#include "trainsim/workload.h"
#include "trainsim/workload_build.h"

/* The simulator's runtime options as the task-graph generator takes them
 * (the plan-dependent ones, Shampoo's rate and the BF16 accumulation, are
 * sim_workload_build's). */
void sim_wl_build_options(const SimOptions *o, const ParallelPlan *p, WlBuildOptions *bo);
/* The task graph (wl_build: the JSON / Chakra workload) of in's plan, its
 * layer template costed as sim_simulate costs it, so that its replay
 * (sim_replay_dag) agrees with the simulation. Resolves in->plan with the
 * simulator's own plan rules (TS_ERR_PLAN, as sim_simulate). */
TsStatus sim_workload_build(SimSetup *in, Workload **out, TsError *err);
/* AICB's SimAI rows (wl_build_aicb) of in's plan, costed the same way, CP
 * folded into DP (AICB has none). */
TsStatus sim_workload_build_aicb(SimSetup *in, bool compat_1_1, Workload **out, TsError *err);

#endif
