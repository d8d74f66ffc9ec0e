/* sim_internal.h — shared between the sim sources (not public). */
#ifndef TRAINSIM_SIM_INTERNAL_H
#define TRAINSIM_SIM_INTERNAL_H

#include "trainsim/sim.h"

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
