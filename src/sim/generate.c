/*
 * generate.c — the task graph of what the simulator models: the glue from
 * the planner's nouns (ModelSpec, ParallelPlan, SimOptions, HwModel) to the
 * costed step the workload generators expand (the layer template and its
 * costs, exactly as sim_simulate costs them), and sim_workload_build, which
 * writes a plan as the JSON / Chakra task graph (its replay agrees with the
 * simulation: golden sim_workload_dag_roundtrip, test_properties' random
 * round trips) or as AICB's SimAI rows.
 */
#include <stdlib.h>
#include <string.h>

#include "cost_int.h"
#include "sim_internal.h"
#include "trainsim/sim.h"
#include "trainsim/sim_workload.h"

void sim_wl_build_options(const SimOptions *o, const ParallelPlan *p, WlBuildOptions *bo)
{
    _Static_assert((int)WL_CP_P2P == (int)SIM_CP_P2P && (int)WL_CP_ALLGATHER == (int)SIM_CP_ALLGATHER &&
                       (int)WL_CP_A2A == (int)SIM_CP_A2A,
                   "WlCpComm follows SimCpComm");
    int gb = o->fp32_grad_reduce ? 4 : 2;
    *bo = (WlBuildOptions){.cp_comm = (WlCpComm)o->cp_comm,
                           .grad_bytes = gb,
                           .bucket_params = o->bucket_bytes > 0 ? o->bucket_bytes / gb : 0,
                           .param_gather_at_step = !o->param_gather_overlap,
                           .dp_after_backward = !o->dp_overlap,
                           .optimizer_bytes = sim_optimizer_bytes(o, p),
                           .selective_ops = o->selective_ops,
                           .sequential_experts = o->sequential_experts,
                           .pair_sm_share = o->pair_sm_share};
    if (plan_ds_pipe(p)) { /* the engine reduces after the flush and gathers at the step */
        bo->dp_after_backward = true;
        bo->param_gather_at_step = true;
    }
}

/* The costed step of in's resolved plan p: template and costs with the
 * simulator's runtime choices, GEMM dtype and tensor-core factor. */
static void step_of(const SimSetup *in, const ParallelPlan *p, WlStepStore *st, WlStep *s)
{
    PartRuntime rt;
    sim_part_runtime(&in->opt, &rt);
    CostCtx cc;
    sim_cost_ctx(&cc, in->hw, p, &in->opt, sim_tensor_factor(&in->hw->gpu, &in->opt, p->gpus), in->net);
    wl_step_make(in->model, p, &rt, &cc, st, s);
}

TsStatus sim_workload_build(SimSetup *in, Workload **out, TsError *err)
{
    *out = NULL;
    ParallelPlan *p = &in->plan;
    TsStatus st = sim_setup_resolve(in, err); /* the simulator's own checks */
    if (st) return st;
    WlStepStore *store = malloc(sizeof *store);
    if (!store) return ts_err(err, TS_ERR_INTERNAL, "out of memory");
    WlStep step;
    step_of(in, p, store, &step);
    WlBuildOptions bo;
    sim_wl_build_options(&in->opt, p, &bo);
    bo.shampoo_s_per_param = sim_shampoo_s_per_param(in->hw, in->model, p);
    bo.fp32_grad_accum = plan_ds_pipe(p) && p->dtype == TS_DTYPE_BF16;
    bo.net = in->net;
    st = wl_build(&step, &bo, out, err);
    free(store);
    return st;
}

TsStatus sim_workload_build_aicb(SimSetup *in, bool compat_1_1, Workload **out, TsError *err)
{
    *out = NULL;
    TsStatus st = sim_setup_resolve(in, err);
    if (st) return st;
    /* AICB has no context parallelism: the CP ranks become data-parallel
     * ranks over whole sequences */
    ParallelPlan q = in->plan;
    q.dp *= q.cp;
    q.cp = 1;
    WlStepStore *store = malloc(sizeof *store);
    if (!store) return ts_err(err, TS_ERR_INTERNAL, "out of memory");
    WlStep step;
    step_of(in, &q, store, &step);
    WlBuildOptions bo;
    sim_wl_build_options(&in->opt, &q, &bo);
    WlAicbOptions ao = {.compat_1_1 = compat_1_1, .build = &bo};
    st = wl_build_aicb(&step, &ao, out, err);
    free(store);
    return st;
}
