/* sim_internal.h — shared between the sim sources (not public). */
#ifndef TRAINSIM_SIM_INTERNAL_H
#define TRAINSIM_SIM_INTERNAL_H

#include <stddef.h>
#include <string.h>

#include "trainsim/sim.h"

/* Zero a result up to its warnings: n_warnings says how many of those are
 * set, and the rest (most of the struct's size) is never read. */
static inline void sim_result_clear(SimResult *r) { memset(r, 0, offsetof(SimResult, warnings)); }

/* Cost arrays kept in the work space: n_chunks SimChunkCost and n_stages
 * SimStageCost, zeroed. NULL on allocation failure. */
SimChunkCost *sim_work_costs(SimWork *w, int32_t n_chunks, int32_t n_stages, SimStageCost **stages);

/* The chunk costs the last sim_simulate / sim_lower_bound on w assembled
 * ([stages * chunks], SimPipeline.chunk's layout; valid until the next). */
const SimChunkCost *sim_work_chunk_costs(const SimWork *w);

/* The layer-cost cache slot of w (layer_cost.c owns the contents, one malloc'd
 * block freed by sim_work_destroy); NULL when caching is off. */
void **sim_work_cost_cache(SimWork *w);

/* Resolve in->plan and apply the simulator's own plan rules (seq a multiple
 * of cp, the CP exchange's head split, DeepSpeed's pipe 1F1B only): what
 * sim_simulate and sim_workload_build both require. */
TsStatus sim_setup_resolve(SimSetup *in, TsError *err);

#endif
